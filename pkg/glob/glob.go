// Package glob matches finalizer names, resource names and namespaces against simple
// patterns. Unlike path.Match, "*" also matches "/", because finalizer names are
// domain-qualified paths: "*.example.com/*" matches "db.example.com/finalizer".
package glob

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Pattern is a compiled glob: "*" matches any run of characters, "?" one character, and
// every other character itself. A pattern without wildcards is an exact name.
type Pattern struct {
	raw   string
	parts []string // literal parts between wildcards
	wild  []byte   // wildcard before parts[i+1]: '*' or '?'
}

// Compile parses a pattern. Patterns are never empty.
func Compile(pattern string) (Pattern, error) {
	if pattern == "" {
		return Pattern{}, fmt.Errorf("empty pattern")
	}
	p := Pattern{raw: pattern}
	start := 0
	for i := 0; i < len(pattern); i++ {
		if c := pattern[i]; c == '*' || c == '?' {
			p.parts = append(p.parts, pattern[start:i])
			p.wild = append(p.wild, c)
			start = i + 1
		}
	}
	p.parts = append(p.parts, pattern[start:])
	return p, nil
}

// MustCompile is Compile for patterns known to be valid.
func MustCompile(pattern string) Pattern {
	p, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// Literal reports whether the pattern has no wildcards.
func (p Pattern) Literal() bool { return len(p.wild) == 0 }

// Match reports whether s matches the whole pattern.
func (p Pattern) Match(s string) bool {
	if p.Literal() {
		return s == p.raw
	}
	return match(p.parts, p.wild, s)
}

func match(parts []string, wild []byte, s string) bool {
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	if len(wild) == 0 {
		return s == ""
	}
	switch wild[0] {
	case '?':
		if s == "" {
			return false
		}
		_, size := utf8.DecodeRuneInString(s)
		return match(parts[1:], wild[1:], s[size:])
	default: // '*': try every split, shortest first
		for i := 0; i <= len(s); i++ {
			if match(parts[1:], wild[1:], s[i:]) {
				return true
			}
		}
		return false
	}
}

// Set is a list of patterns; it matches what any of them matches. An empty Set matches
// everything.
type Set []Pattern

// CompileSet compiles every pattern, naming the one that fails.
func CompileSet(patterns []string) (Set, error) {
	set := make(Set, 0, len(patterns))
	for _, raw := range patterns {
		p, err := Compile(raw)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", raw, err)
		}
		set = append(set, p)
	}
	return set, nil
}

// Match reports whether s matches any pattern of the set, or the set is empty.
func (s Set) Match(name string) bool {
	if len(s) == 0 {
		return true
	}
	for _, p := range s {
		if p.Match(name) {
			return true
		}
	}
	return false
}
