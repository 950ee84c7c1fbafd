package owner

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/fieldsv1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// genericManagerPatterns are field managers that apply manifests for a person or a pipeline. A
// finalizer they wrote came from a manifest: they added it, but nobody expects them to
// remove it.
var genericManagerPatterns = []string{
	"kubectl", "kubectl-*", // kubectl-client-side-apply, kubectl-edit, kubectl-patch, ...
	"helm", "helm-controller", // Helm, Flux's helm-controller
	"kustomize-controller", "gotk-sync-manager", // Flux
	"argocd-controller", "argocd-application-controller", "argocd-server", // Argo CD
	"kapp", "kapp-controller", // Carvel
	"fleet-agent",              // Rancher Fleet
	"Terraform", "terraform-*", // Terraform's kubernetes provider
	"pulumi-kubernetes*", // Pulumi
	// Crossplane's provider-kubernetes applies each Object's manifest with server-side
	// apply as provider-kubernetes/OBJECT (internal/controller/{cluster,namespaced}/
	// object/object.go: ssaFieldOwner); provider-helm installs each Release's chart as
	// provider-helm/RELEASE. What they apply comes from a manifest, as kubectl's does.
	"provider-kubernetes/*", "provider-helm/*",
	"skaffold", "tilt", "k9s",
	"before-first-apply", // server-side apply's migration placeholder
	"Go-http-client",     // a Go client that did not name itself
	"kubectl-finalize",
}

var genericManagers = mustSet(genericManagerPatterns...)

func mustSet(patterns ...string) glob.Set {
	s, err := glob.CompileSet(patterns)
	if err != nil {
		panic(err)
	}
	return s
}

// IsGenericManager reports whether manager applies manifests for people or pipelines
// rather than acting as a controller.
func IsGenericManager(manager string) bool {
	return genericManagers.Match(manager)
}

// GenericManagerExamples are names of generic clients, one for each pattern of them
// ("kubectl-x" for kubectl-*): what a name given for an operator must not match.
func GenericManagerExamples() []string {
	out := make([]string, len(genericManagerPatterns))
	for i, p := range genericManagerPatterns {
		out[i] = strings.ReplaceAll(p, "*", "x")
	}
	return out
}

// Writers returns the field managers whose managed fields hold the finalizer name in
// field ("metadata.finalizers" or "spec.finalizers"), in managedFields order.
func Writers(managed []metav1.ManagedFieldsEntry, field, name string) []string {
	path := make([]string, 0, 2)
	for _, p := range strings.Split(field, ".") {
		path = append(path, "f:"+p)
	}
	value, err := json.Marshal(name)
	if err != nil {
		return nil
	}
	key := "v:" + string(value)
	// An entry that does not hold the key's bytes cannot hold the key: most entries are
	// skipped at memchr speed, without parsing (fieldsV1 of a large spec runs to tens of
	// kilobytes). Names with characters JSON may escape differently are always parsed.
	var needle []byte
	var encodedPath [][]byte
	if plainName.MatchString(name) {
		needle, _ = json.Marshal(key)
		encodedPath = encodedPaths[field]
		if encodedPath == nil {
			encodedPath = encodePath(path)
		}
	}
	var writers []string
	for i := range managed {
		e := &managed[i]
		if e.FieldsV1 == nil || e.Manager == "" {
			continue
		}
		raw := e.FieldsV1.GetRawBytes()
		// A key may be written with escapes a plain name does not need (\/, \u002f):
		// such fields are parsed.
		if needle != nil && !bytes.Contains(raw, needle) && !bytes.Contains(raw, []byte(`\u`)) && !bytes.Contains(raw, []byte(`\/`)) {
			continue
		}
		held, sure := false, false
		if needle != nil {
			held, sure = holdsEncoded(raw, encodedPath, needle)
		}
		if !sure {
			held = holds(raw, path, key)
		}
		if held && !slices.Contains(writers, e.Manager) {
			writers = append(writers, e.Manager)
		}
	}
	return writers
}

// encodedPaths are the JSON encodings of the paths of the two finalizer fields in fieldsV1.
var encodedPaths = map[string][][]byte{
	"metadata.finalizers": encodePath([]string{"f:metadata", "f:finalizers"}),
	"spec.finalizers":     encodePath([]string{"f:spec", "f:finalizers"}),
}

// encodePath is the JSON encoding of each key of path.
func encodePath(path []string) [][]byte {
	out := make([][]byte, 0, len(path))
	for _, p := range path {
		e, _ := json.Marshal(p)
		out = append(out, e)
	}
	return out
}

// plainName matches the finalizer names JSON writes the same way whoever encodes them.
var plainName = regexp.MustCompile(`^[A-Za-z0-9./_-]+$`)

// holds walks the fieldsV1 tree along path and reports whether key is a member there.
func holds(raw []byte, path []string, key string) bool {
	for _, p := range path {
		var node map[string]json.RawMessage
		if err := json.Unmarshal(raw, &node); err != nil {
			return false
		}
		next, ok := node[p]
		if !ok {
			return false
		}
		raw = next
	}
	var leaf map[string]json.RawMessage
	if err := json.Unmarshal(raw, &leaf); err != nil {
		return false
	}
	_, ok := leaf[key]
	return ok
}

// Reconciles says whether the writes of field manager w to an object are a controller's:
// it writes the object's status, or all it wrote is metadata (finalizers, labels,
// annotations, owner references) of an object whose content someone else wrote. A manager
// that wrote the object's content (its spec, its data) created or applied it: a GitOps
// applier, an ApplicationSet, a restore, a person with a client of their own. That it
// wrote a finalizer then says who added the finalizer, not who removes it.
func Reconciles(managed []metav1.ManagedFieldsEntry, w string) bool {
	content, seen := false, false
	for i := range managed {
		e := &managed[i]
		if e.Manager != w {
			continue
		}
		switch {
		case e.Subresource == "status":
			return true
		case e.Subresource != "" || e.FieldsV1 == nil:
			continue
		}
		seen = true
		status, wroteContent, ok := controllerWrites(e.FieldsV1.GetRawBytes())
		switch {
		case !ok:
			return false // unreadable: nothing proves it reconciles
		case status:
			return true
		}
		content = content || wroteContent
	}
	return seen && !content
}

// controllerWrites reads one entry's fields for Reconciles: whether they hold the
// object's status, or content beyond its metadata; ok is false when they are malformed.
// It walks the bytes (fieldsv1.Members), allocating nothing: a scan of 10,000 stuck objects
// decoded 26 MB of maps here (#36). A key written with escapes is left to the decoder
// (controllerWritesDecoded), which answers every input alike (FuzzControllerWrites).
func controllerWrites(raw []byte) (status, content, ok bool) {
	var spec []byte
	ok, sure := fieldsv1.Members(raw, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 {
			return false
		}
		switch string(k) {
		case `"f:status"`:
			status = true
		case `"f:metadata"`, `"f:apiVersion"`, `"f:kind"`, `"."`:
		case `"f:spec"`:
			spec = v // of two, the last counts
		default:
			content = true
		}
		return true
	})
	if !sure {
		return controllerWritesDecoded(raw)
	}
	if !ok {
		return false, false, false
	}
	if status || spec == nil {
		return status, content, true
	}
	// A namespace's own finalizers are in its spec.
	ok, sure = fieldsv1.Members(spec, func(k, _ []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 {
			return false
		}
		if string(k) != `"f:finalizers"` && string(k) != `"."` {
			content = true
		}
		return true
	})
	if !sure {
		return controllerWritesDecoded(raw)
	}
	return false, content, ok
}

// controllerWritesDecoded is controllerWrites by decoding.
func controllerWritesDecoded(raw []byte) (status, content, ok bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return false, false, false // not an object (null included)
	}
	if _, ok := top["f:status"]; ok {
		return true, false, true // a type without a status subresource
	}
	for k, v := range top {
		switch k {
		case "f:metadata", "f:apiVersion", "f:kind", ".":
		case "f:spec":
			var spec map[string]json.RawMessage
			if json.Unmarshal(v, &spec) != nil || spec == nil {
				return false, false, false
			}
			for sk := range spec {
				if sk != "f:finalizers" && sk != "." {
					content = true
				}
			}
		default:
			content = true
		}
	}
	return false, content, true
}
