package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// writeOutput runs write against path, or against stdout when path is empty.
// A file is written under a temporary name and renamed into place only when
// write succeeds, so a failure never leaves a half-written result.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
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
