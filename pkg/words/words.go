// Package words holds the English every message of kubectl-finalize shares: counts of a
// noun. Domain packages and printers alike use it, so a message reads the same wherever
// it is made.
package words

import "strconv"

// Count is n and the noun, plural unless n is 1: "1 object", "2 objects", "0 objects".
func Count(n int, noun string) string { return strconv.Itoa(n) + " " + Noun(n, noun) }

// Noun is the noun, plural unless n is 1: the regular English plural, an "s"; a noun
// whose plural is not regular is written out by its caller.
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
