// Package clip quotes untrusted input in error messages: all of a short
// value, or its first bytes and its length, so that an error about a
// 200 MB field stays one short line.
package clip

import "strconv"

// Max is how many bytes of a value Quote shows.
const Max = 40

// Quote quotes v, Go-escaped: all of it when at most Max bytes, else its
// first Max bytes and its length.
func Quote[T string | []byte](v T) string {
	if len(v) <= Max {
		return strconv.Quote(string(v))
	}
	return strconv.Quote(string(v[:Max])) + "... (" + strconv.Itoa(len(v)) + " bytes)"
}
