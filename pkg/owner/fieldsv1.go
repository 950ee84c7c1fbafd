package owner

import "github.com/kubectl-finalize/kubectl-finalize/pkg/fieldsv1"

// holdsEncoded is holds for a path and key given as their JSON encodings (`"f:metadata"`,
// `"v:\"x\""`), for fieldsV1 that encodes them so (a plain name, which every encoder writes
// the same way): it walks the bytes and compares members' keys as they are written,
// allocating nothing, where holds decodes a map at each level (73 MB of the 275 MB a scan
// of 10,000 stuck objects allocated). It answers as holds does: malformed JSON holds
// nothing, and of two members with one key the last counts; a key written with escapes,
// which it cannot compare as written, is left to holds (sure is false).
func holdsEncoded(raw []byte, path [][]byte, key []byte) (held, sure bool) {
	for _, p := range path {
		v, ok, sure := fieldsv1.Member(raw, p)
		if !sure || !ok {
			return false, sure
		}
		raw = v
	}
	_, ok, sure := fieldsv1.Member(raw, key)
	return ok, sure
}
