// Package gaitbin builds the gait binary for tests that run gait's own agents
// as separate processes (gait replica agent), so they exercise the command
// line a user runs rather than an in-process copy.
package gaitbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles cmd/gait into a new temporary directory and returns the
// binary's path and a function that removes the directory.
func Build() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gait-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("build gait: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "gait")
	build := exec.Command("go", "build", "-o", path, "github.com/gait-dev/gait/cmd/gait")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build gait: %w", err)
	}
	return path, cleanup, nil
}
