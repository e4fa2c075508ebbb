// Package atomicfile writes a file so that readers see either the whole new
// content or the old file: gait never leaves a half-written result behind.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write calls write with a temporary file in path's directory and renames it
// to path only when write and the close succeed; on any error path is left
// untouched and the temporary file is removed.
func Write(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	// CreateTemp makes the file private; results are meant to be shared.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteBytes writes b to path atomically.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
}
