package preflight

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Helm 3 keeps each revision of a release in a Secret of type helm.sh/release.v1 named
// sh.helm.release.v1.NAME.vREVISION in the release's namespace, labelled owner=helm,
// name=NAME, status and version. Its data.release is base64 of the gzip of the release as
// JSON (then base64 again by the Secret); the JSON's "manifest" is the multi-document
// YAML of the objects Helm installed. Helm's uninstall deletes those objects, except the
// ones the manifest annotates helm.sh/resource-policy (=keep, or any other value). Hooks and the chart's crds/ are not in the
// manifest, and Helm does not delete them.
const (
	helmSecretType     = "helm.sh/release.v1"
	helmResourcePolicy = "helm.sh/resource-policy"
	helmStatusDeployed = "deployed"
)

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// helmRelease is what is read of a release's record.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Manifest  string `json:"manifest"`
	Info      struct {
		Status string `json:"status"`
	} `json:"info"`
}

// readRelease reads the latest revision of the release, as Helm's uninstall does (it
// deletes the objects of the manifest of the highest revision, whatever its status: a
// failed or pending upgrade's manifest is what goes), and the objects of its manifest.
// The records are read from Secrets (Helm 3's default driver), else from ConfigMaps
// (HELM_DRIVER=configmap), both labelled owner=helm and name=NAME in the release's
// namespace.
func readRelease(ctx context.Context, kc client.Interface, mapper meta.RESTMapper, rel Release) (*helmRelease, []Target, []string, error) {
	selector := labels.Set{"owner": "helm", "name": rel.Name}.AsSelector().String()
	list, err := kc.CoreV1().Secrets(rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the records of Helm release %s in namespace %s: %w", rel.Name, rel.Namespace, err)
	}
	var records []helmRecord
	for _, s := range list.Items {
		if s.Type == helmSecretType {
			records = append(records, helmRecord{kind: "secrets", name: s.Name, labels: s.Labels, data: s.Data["release"]})
		}
	}
	if len(records) == 0 {
		cms, err := kc.CoreV1().ConfigMaps(rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("helm release %s not found in Secrets of namespace %s, and its ConfigMaps could not be read: %w", rel.Name, rel.Namespace, err)
		}
		for _, c := range cms.Items {
			if d, ok := c.Data["release"]; ok {
				records = append(records, helmRecord{kind: "configmaps", name: c.Name, labels: c.Labels, data: []byte(d)})
			}
		}
	}
	if len(records) == 0 {
		return nil, nil, nil, fmt.Errorf("helm release %s not found in namespace %s: no Secret of type %s nor ConfigMap labelled %s (Helm 3's Secret or ConfigMap storage)",
			rel.Name, rel.Namespace, helmSecretType, selector)
	}
	revision := func(r *helmRecord) int { n, _ := strconv.Atoi(r.labels["version"]); return n }
	sort.SliceStable(records, func(i, j int) bool { return revision(&records[i]) > revision(&records[j]) })
	chosen := &records[0]
	var warnings []string
	if status := chosen.labels["status"]; status != helmStatusDeployed {
		warnings = append(warnings, fmt.Sprintf("the latest revision of helm release %s, %d, is %s, not deployed: its objects are checked, as helm uninstall deletes them", rel.Name, revision(chosen), status))
	}
	r, err := decodeRelease(chosen.data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decoding %s/%s -n %s, the record of Helm release %s: %w", chosen.kind, chosen.name, rel.Namespace, rel.Name, err)
	}
	targets, more, err := manifestObjects(mapper, r.Manifest, rel.Namespace)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the manifest of Helm release %s revision %d: %w", rel.Name, r.Version, err)
	}
	return r, targets, append(warnings, more...), nil
}

// helmRecord is one revision's record: a Secret or a ConfigMap.
type helmRecord struct {
	kind, name string
	labels     map[string]string
	data       []byte
}

// decodeRelease decodes the release.v1 encoding: base64, then gzip when the stream
// starts with gzip's magic, then JSON.
func decodeRelease(data []byte) (*helmRelease, error) {
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("data.release is not base64: %w", err)
	}
	if bytes.HasPrefix(b, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		if b, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("data.release is not gzip: %w", err)
		}
	}
	var r helmRelease
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("data.release is not a release: %w", err)
	}
	return &r, nil
}

// documentSeparator splits a multi-document YAML stream as Helm does.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// manifestObjects resolves the objects of a manifest. An object of a namespaced type
// without a namespace is in the release's. A kind the cluster does not serve is a
// warning: there is nothing of it to delete.
func manifestObjects(mapper meta.RESTMapper, manifest, namespace string) ([]Target, []string, error) {
	var out []Target
	var warnings []string
	for _, doc := range documentSeparator.Split(manifest, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, nil, err
		}
		if len(obj) == 0 {
			continue // only comments
		}
		u := &unstructured.Unstructured{Object: obj}
		items := []unstructured.Unstructured{*u}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, nil, err
			}
			items = list.Items
		}
		for i := range items {
			it := &items[i]
			gvk := it.GroupVersionKind()
			if gvk.Kind == "" || it.GetName() == "" {
				return nil, nil, fmt.Errorf("an object without kind or name: %.80q", doc)
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%s %s of the release is of a kind the cluster does not serve: skipped", gvk.Kind, it.GetName()))
				continue
			}
			t := Target{Ref: kube.Ref{Resource: kube.Resource{GroupVersionResource: m.Resource, Kind: m.GroupVersionKind.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, Name: it.GetName()}}
			// Helm reads the policy from the manifest, not from the live object, and
			// deletes only the objects without one: keep is kept, and any other value
			// (prefer-existing, a typo) is left out of both its lists, so not deleted either.
			t.policy, t.keep = it.GetAnnotations()[helmResourcePolicy]
			if t.Resource.Namespaced {
				t.Namespace = it.GetNamespace()
				if t.Namespace == "" {
					t.Namespace = namespace
				}
			}
			out = append(out, t)
		}
	}
	return out, warnings, nil
}

// encodeRelease encodes a release record the way Helm 3 writes data.release (before the
// Secret's own base64): for tests that write a real record.
func encodeRelease(name, namespace string, version int, status, manifest string) ([]byte, error) {
	r := helmRelease{Name: name, Namespace: namespace, Version: version, Manifest: manifest}
	r.Info.Status = status
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}
