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

	corev1 "k8s.io/api/core/v1"
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
// ones annotated helm.sh/resource-policy=keep. Hooks and the chart's crds/ are not in the
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

// readRelease reads the latest deployed revision of the release (the latest revision
// when none is deployed, with a warning) and the objects of its manifest.
func readRelease(ctx context.Context, kc client.Interface, mapper meta.RESTMapper, rel Release) (*helmRelease, []Target, []string, error) {
	selector := labels.Set{"owner": "helm", "name": rel.Name}.AsSelector().String()
	list, err := kc.CoreV1().Secrets(rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the records of Helm release %s in namespace %s: %w", rel.Name, rel.Namespace, err)
	}
	var records []corev1.Secret
	for _, s := range list.Items {
		if s.Type == helmSecretType {
			records = append(records, s)
		}
	}
	if len(records) == 0 {
		return nil, nil, nil, fmt.Errorf("helm release %s not found in namespace %s: no Secret of type %s labelled %s (Helm 3 with its default Secret storage)",
			rel.Name, rel.Namespace, helmSecretType, selector)
	}
	revision := func(s *corev1.Secret) int { n, _ := strconv.Atoi(s.Labels["version"]); return n }
	sort.SliceStable(records, func(i, j int) bool { return revision(&records[i]) > revision(&records[j]) })
	chosen := &records[0]
	for i := range records {
		if records[i].Labels["status"] == helmStatusDeployed {
			chosen = &records[i]
			break
		}
	}
	var warnings []string
	if chosen.Labels["status"] != helmStatusDeployed {
		warnings = append(warnings, fmt.Sprintf("helm release %s has no deployed revision; the objects of its latest, revision %d (%s), are checked", rel.Name, revision(chosen), chosen.Labels["status"]))
	}
	r, err := decodeRelease(chosen.Data["release"])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decoding secrets/%s -n %s, the record of Helm release %s: %w", chosen.Name, rel.Namespace, rel.Name, err)
	}
	targets, more, err := manifestObjects(mapper, r.Manifest, rel.Namespace)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the manifest of Helm release %s revision %d: %w", rel.Name, r.Version, err)
	}
	return r, targets, append(warnings, more...), nil
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
			t := Target{Resource: kube.Resource{GroupVersionResource: m.Resource, Kind: m.GroupVersionKind.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, Name: it.GetName()}
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

// EncodeRelease encodes a release record the way Helm 3 writes data.release (before the
// Secret's own base64): for tests that write a real record.
func EncodeRelease(name, namespace string, version int, status, manifest string) ([]byte, error) {
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
