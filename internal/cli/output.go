package cli

import (
	"io"

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
