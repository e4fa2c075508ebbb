package cli

import (
	"io"
	"slices"

	"github.com/gait-dev/gait/internal/atomicfile"
)

// writeOutput runs write against path, or against stdout when path is empty
// or "-". A file is written atomically, so a failure never leaves a
// half-written result.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(stdout)
	}
	return atomicfile.Write(path, write)
}

// sortedFactors returns a factor map's names in order and their values.
func sortedFactors(factors map[string]string) (names, values []string) {
	for k := range factors {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		values = append(values, factors[k])
	}
	return names, values
}
