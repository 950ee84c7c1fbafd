// Package fieldsv1 walks the JSON of managedFields' fieldsV1 without decoding it: the
// members of an object, each key as written, allocating nothing. A scan of thousands of
// stuck objects reads who wrote their finalizers, and whether a manager's writes are a
// controller's, from every object's fields; decoding them into maps was a third of what
// such a scan allocated (#36).
package fieldsv1

import "bytes"

// Member returns the value of the last member of the JSON object raw whose key is written
// as encoded, and whether there is one. raw must be one object, with nothing but white
// space after it; anything malformed in it is no member. sure is false when a key of the
// object is written with escapes.
func Member(raw, encoded []byte) (value []byte, found, sure bool) {
	ok, sure := Members(raw, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 && !bytes.Equal(k, encoded) {
			// Escapes the encoding does not share: only a decoder can tell.
			return false
		}
		if bytes.Equal(k, encoded) {
			value, found = v, true
		}
		return true
	})
	if !ok || !sure {
		return nil, false, sure
	}
	return value, found, true
}

// Members calls fn with the key (as written, quotes included) and the value of each
// member of the JSON object raw, in order, and says whether raw is one well-formed object
// with nothing but white space after it (ok). fn returns false to give up: sure is then
// false, as fn cannot tell (a key written with escapes). What fn was told of a malformed
// object must be forgotten.
func Members(raw []byte, fn func(key, value []byte) bool) (ok, sure bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false, true
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return skipSpace(raw, i+1) == len(raw), true
	}
	for i < len(raw) {
		end, ok := skipString(raw, i)
		if !ok {
			return false, true
		}
		k := raw[i:end]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false, true
		}
		i = skipSpace(raw, i+1)
		vend, ok := skipValue(raw, i, 1)
		if vend == tooDeep {
			return false, false
		}
		if !ok {
			return false, true
		}
		if !fn(k, raw[i:vend]) {
			return false, false
		}
		i = skipSpace(raw, vend)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return skipSpace(raw, i+1) == len(raw), true
		default:
			return false, true
		}
	}
	return false, true
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string that starts at i, checking its escapes.
func skipString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	for i++; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(raw) {
				return 0, false
			}
			switch raw[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(raw) {
					return 0, false
				}
				for _, h := range raw[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// maxDepth is how deep in the object it walks containers may nest: real fieldsV1 nests a
// few dozen levels. Deeper, it is not sure (Members), and a decoder decides, which
// refuses more than 10,000 levels: the walk never says well-formed what it refuses.
const maxDepth = 1000

// tooDeep is the end skipValue returns for containers nested deeper than maxDepth.
const tooDeep = -1

// skipValue returns the end of the JSON value that starts at i, depth containers deep: a
// string, an object or an array (whose members it checks as it goes), true, false, null
// or a number; tooDeep past maxDepth.
func skipValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) {
		return 0, false
	}
	switch c := raw[i]; {
	case c == '"':
		return skipString(raw, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return tooDeep, false
		}
		closing, object := byte('}'), c == '{'
		if !object {
			closing = ']'
		}
		i = skipSpace(raw, i+1)
		if i < len(raw) && raw[i] == closing {
			return i + 1, true
		}
		for i < len(raw) {
			if object {
				end, ok := skipString(raw, i)
				if !ok {
					return 0, false
				}
				i = skipSpace(raw, end)
				if i >= len(raw) || raw[i] != ':' {
					return 0, false
				}
				i = skipSpace(raw, i+1)
			}
			end, ok := skipValue(raw, i, depth+1)
			if !ok {
				return end, false // tooDeep stays so
			}
			i = skipSpace(raw, end)
			switch {
			case i < len(raw) && raw[i] == ',':
				i = skipSpace(raw, i+1)
			case i < len(raw) && raw[i] == closing:
				return i + 1, true
			default:
				return 0, false
			}
		}
		return 0, false
	case c == 't' && bytes.HasPrefix(raw[i:], []byte("true")):
		return i + 4, true
	case c == 'f' && bytes.HasPrefix(raw[i:], []byte("false")):
		return i + 5, true
	case c == 'n' && bytes.HasPrefix(raw[i:], []byte("null")):
		return i + 4, true
	case c == '-' || isDigit(c):
		return skipNumber(raw, i)
	}
	return 0, false
}

// skipNumber returns the end of the JSON number that starts at i:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(raw []byte, i int) (int, bool) {
	if raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && isDigit(raw[i]):
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		i++
		if i >= len(raw) || !isDigit(raw[i]) {
			return 0, false
		}
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		if i >= len(raw) || !isDigit(raw[i]) {
			return 0, false
		}
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
	}
	return i, true
}
