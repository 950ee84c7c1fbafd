package kube

import (
	"bytes"
	"encoding/json"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/fieldsv1"
)

// slimMeta is what a stuck object keeps of its metadata: everything the diagnosis, the
// policy and the writer read (names, uid, versions, times, labels, owner references,
// finalizers, and who wrote what), with each managedFields entry's fields cut to what is
// read of them (slimFields), and the strings that thousands of objects repeat
// (namespace, finalizers, labels, managers) shared. Annotations are not kept: nothing
// reads a stuck object's annotations from its list (a preset's or a policy's are read
// from the full object, fetched again). A scan of 10,000 stuck objects kept 1.1 KB of
// metadata per object before (#36).
func slimMeta(in *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: in.Name, GenerateName: in.GenerateName, Namespace: intern(in.Namespace), UID: in.UID,
		ResourceVersion: in.ResourceVersion, Generation: in.Generation, CreationTimestamp: in.CreationTimestamp,
	}
	if in.DeletionTimestamp != nil {
		t := *in.DeletionTimestamp
		out.DeletionTimestamp = &t
	}
	if in.DeletionGracePeriodSeconds != nil {
		s := *in.DeletionGracePeriodSeconds
		out.DeletionGracePeriodSeconds = &s
	}
	if in.Labels != nil {
		out.Labels = make(map[string]string, len(in.Labels))
		for k, v := range in.Labels {
			out.Labels[intern(k)] = intern(v)
		}
	}
	for i := range in.OwnerReferences {
		r := *in.OwnerReferences[i].DeepCopy()
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
		out.OwnerReferences = append(out.OwnerReferences, r)
	}
	if in.Finalizers != nil {
		out.Finalizers = make([]string, len(in.Finalizers))
		for i, f := range in.Finalizers {
			out.Finalizers[i] = intern(f)
		}
	}
	if in.ManagedFields != nil {
		out.ManagedFields = make([]metav1.ManagedFieldsEntry, len(in.ManagedFields))
		for i := range in.ManagedFields {
			e := &in.ManagedFields[i]
			s := metav1.ManagedFieldsEntry{
				Manager: intern(e.Manager), Operation: metav1.ManagedFieldsOperationType(intern(string(e.Operation))),
				APIVersion: intern(e.APIVersion), FieldsType: intern(e.FieldsType), Subresource: intern(e.Subresource),
			}
			if e.Time != nil {
				t := *e.Time
				s.Time = &t
			}
			if e.FieldsV1 != nil {
				s.FieldsV1 = &metav1.FieldsV1{}
				s.FieldsV1.SetRawBytes(SlimFields(e.FieldsV1.GetRawBytes()))
			}
			out.ManagedFields[i] = s
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
