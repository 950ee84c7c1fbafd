package kube

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/fieldsv1"
)

// Shared holds the values that the stuck objects of one scan have in common, so that
// each is kept once: label sets (the objects of one release or tenant carry the same),
// managedFields entries' slimmed fields (one operator writes the same fields on each of
// its objects), and times (a mass deletion happens within a second). A nil *Shared
// shares nothing. It lives as long as the scan that made it, not the process, so a
// continuous reconcile does not accumulate what earlier passes saw. The values are
// shared, and so are read-only: nothing writes a stuck object's metadata.
type Shared struct {
	mu     sync.Mutex
	labels map[string]map[string]string
	fields map[string]*metav1.FieldsV1
	times  map[metav1.Time]*metav1.Time
	strs   map[string]string
	key    []byte
}

// NewShared returns an empty Shared, for one scan.
func NewShared() *Shared {
	return &Shared{labels: map[string]map[string]string{}, fields: map[string]*metav1.FieldsV1{}, times: map[metav1.Time]*metav1.Time{}, strs: map[string]string{}}
}

// NewObject is NewObject sharing what s holds.
func (s *Shared) NewObject(r Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace) *Object {
	o := &Object{Resource: r, Meta: s.slimMeta(meta)}
	for _, f := range o.Meta.Finalizers {
		o.Finalizers = append(o.Finalizers, finalizev1alpha1.Finalizer{Name: f, Field: finalizev1alpha1.FieldMetadataFinalizers})
	}
	if ns != nil {
		o.Namespace = ns.DeepCopy()
		delete(o.Namespace.Annotations, corev1.LastAppliedConfigAnnotation)
		for _, f := range ns.Spec.Finalizers {
			o.Finalizers = append(o.Finalizers, finalizev1alpha1.Finalizer{Name: string(f), Field: finalizev1alpha1.FieldSpecFinalizers})
		}
	}
	return o
}

// labelSet returns the one copy of in's labels, their strings interned.
func (s *Shared) labelSet(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	if s == nil {
		return s.internLabels(in)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The key: each label's key and value, length first, in key order.
	s.key = s.key[:0]
	for _, k := range slices.Sorted(maps.Keys(in)) {
		s.key = binary.AppendUvarint(s.key, uint64(len(k)))
		s.key = append(s.key, k...)
		s.key = binary.AppendUvarint(s.key, uint64(len(in[k])))
		s.key = append(s.key, in[k]...)
	}
	if l, ok := s.labels[string(s.key)]; ok {
		return l
	}
	l := make(map[string]string, len(in))
	for k, v := range in {
		l[s.internLocked(k)] = s.internLocked(v)
	}
	s.labels[string(s.key)] = l
	return l
}

// internLabels copies labels with their strings interned, without a Shared.
func (s *Shared) internLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[intern(k)] = intern(v)
	}
	return out
}

// intern returns the one copy of x the scan keeps. unique's copies are shared only while
// a handle to them lives: one a scan made before a collection is not the one it makes
// after, so a scan keeps its own.
func (s *Shared) intern(x string) string {
	if s == nil {
		return intern(x)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.internLocked(x)
}

func (s *Shared) internLocked(x string) string {
	if x == "" {
		return ""
	}
	if c, ok := s.strs[x]; ok {
		return c
	}
	s.strs[x] = x
	return x
}

// slimFields returns the one copy of raw's slimmed fields (SlimFields).
func (s *Shared) slimFields(raw []byte) *metav1.FieldsV1 {
	slim := SlimFields(raw)
	if s == nil {
		f := &metav1.FieldsV1{}
		f.SetRawBytes(slim)
		return f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.fields[string(slim)]; ok {
		return f
	}
	f := &metav1.FieldsV1{}
	f.SetRawBytes(slim)
	s.fields[string(slim)] = f
	return f
}

// time returns the one copy of t.
func (s *Shared) time(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	if s == nil {
		c := *t
		return &c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.times[*t]; ok {
		return c
	}
	c := *t
	s.times[c] = &c
	return &c
}

// slimMeta is what a stuck object keeps of its metadata: everything the diagnosis, the
// policy and the writer read (names, uid, versions, times, labels, owner references,
// finalizers, and who wrote what), with each managedFields entry's fields cut to what is
// read of them (slimFields), and the strings that thousands of objects repeat
// (namespace, finalizers, labels, managers) interned, and with s, the label sets, fields
// and times they repeat shared. Annotations are not kept: nothing reads a stuck object's
// annotations from its list (a preset's or a policy's are read from the full object,
// fetched again). A scan of 10,000 stuck objects kept 1.1 KB of metadata per object
// before (#36).
func (s *Shared) slimMeta(in *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: in.Name, GenerateName: in.GenerateName, Namespace: s.intern(in.Namespace), UID: in.UID,
		ResourceVersion: in.ResourceVersion, Generation: in.Generation, CreationTimestamp: in.CreationTimestamp,
		DeletionTimestamp: s.time(in.DeletionTimestamp), Labels: s.labelSet(in.Labels),
	}
	if in.DeletionGracePeriodSeconds != nil {
		g := *in.DeletionGracePeriodSeconds
		out.DeletionGracePeriodSeconds = &g
	}
	for i := range in.OwnerReferences {
		r := *in.OwnerReferences[i].DeepCopy()
		r.APIVersion, r.Kind = s.intern(r.APIVersion), s.intern(r.Kind)
		out.OwnerReferences = append(out.OwnerReferences, r)
	}
	if in.Finalizers != nil {
		out.Finalizers = make([]string, len(in.Finalizers))
		for i, f := range in.Finalizers {
			out.Finalizers[i] = s.intern(f)
		}
	}
	if in.ManagedFields != nil {
		out.ManagedFields = make([]metav1.ManagedFieldsEntry, len(in.ManagedFields))
		for i := range in.ManagedFields {
			e := &in.ManagedFields[i]
			out.ManagedFields[i] = metav1.ManagedFieldsEntry{
				Manager: s.intern(e.Manager), Operation: metav1.ManagedFieldsOperationType(s.intern(string(e.Operation))),
				APIVersion: s.intern(e.APIVersion), FieldsType: s.intern(e.FieldsType), Subresource: s.intern(e.Subresource),
				Time: s.time(e.Time),
			}
			if e.FieldsV1 != nil {
				out.ManagedFields[i].FieldsV1 = s.slimFields(e.FieldsV1.GetRawBytes())
			}
		}
	}
	return out
}

// intern returns the one copy of s that every object shares.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// keptFields are the fields of a managedFields entry whose content is read: the
// finalizers, which say who wrote each one (owner.Writers). Of every other field only its
// name is read: whether a manager wrote the object's status, or content beyond its
// metadata (owner.Reconciles).
var keptFields = map[string]map[string]bool{
	"f:metadata": {"f:finalizers": true},
	"f:spec":     {"f:finalizers": true, ".": true}, // a namespace's own finalizers
}

// keptEncoded is keptFields with keys as JSON writes them.
var keptEncoded = map[string]map[string]bool{
	`"f:metadata"`: {`"f:finalizers"`: true},
	`"f:spec"`:     {`"f:finalizers"`: true, `"."`: true},
}

// SlimFields cuts an entry's fieldsV1 to what the diagnosis reads of it (keptFields):
// each top-level field's name, the names of spec's fields, and the finalizers whole.
// Every question owner.Writers and owner.Reconciles ask of it is answered as by raw
// (FuzzSlimFields). It walks the bytes, copying what it keeps as written (members of
// one name twice stay twice: the last counts, where it is read); a key written with
// escapes is left to a decoder (slimFieldsDecoded). Malformed JSON is kept as it is, to
// be found malformed where read.
func SlimFields(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	out = append(out, '{')
	sep := false
	ok, sure := fieldsv1.Members(raw, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 {
			return false
		}
		out, sep = appendKey(out, sep, k), true
		kept, inner := keptEncoded[string(k)]
		if !inner {
			out = append(out, "{}"...)
			return true
		}
		start := len(out)
		out = append(out, '{')
		isep := false
		iok, isure := fieldsv1.Members(v, func(ik, iv []byte) bool {
			if bytes.IndexByte(ik, '\\') >= 0 {
				return false
			}
			var value []byte
			switch {
			case kept[string(ik)]:
				value = iv
			case string(k) == `"f:spec"`:
				value = []byte("{}")
			default:
				return true
			}
			out, isep = appendKey(out, isep, ik), true
			out = append(out, value...)
			return true
		})
		switch {
		case !isure:
			return false
		case !iok: // a value, not an object (null): as it was
			out = append(out[:start], v...)
		default:
			out = append(out, '}')
		}
		return true
	})
	switch {
	case !sure:
		return slimFieldsDecoded(raw)
	case !ok:
		return bytes.Clone(raw)
	}
	return bytes.Clone(append(out, '}')) // no more than it holds
}

// appendKey appends a member's key, as written, and its colon to an object being
// written, after a comma when a member came before (sep).
func appendKey(out []byte, sep bool, key []byte) []byte {
	if sep {
		out = append(out, ',')
	}
	out = append(out, key...)
	return append(out, ':')
}

// slimFieldsDecoded is SlimFields by decoding, for keys written with escapes.
func slimFieldsDecoded(raw []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || top == nil {
		return bytes.Clone(raw)
	}
	slim := make(map[string]any, len(top))
	for k, v := range top {
		kept, ok := keptFields[k]
		if !ok {
			slim[k] = struct{}{}
			continue
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) != nil || inner == nil {
			slim[k] = v // malformed, or not an object: as it was
			continue
		}
		in := make(map[string]any, len(inner))
		for ik, iv := range inner {
			switch {
			case kept[ik]:
				in[ik] = iv
			case k == "f:spec":
				in[ik] = struct{}{}
			}
		}
		slim[k] = in
	}
	out, err := json.Marshal(slim)
	if err != nil {
		return bytes.Clone(raw)
	}
	return out
}
