// Package gaitbin builds the gait binary for tests that run gait's own agents
// as separate processes (gait replica agent), so they exercise the command
// line a user runs rather than an in-process copy.
package gaitbin

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles cmd/gait into a new temporary directory and returns the
// binary's path and a function that removes the directory. When GAIT_BIN
// names a binary (make test sets it to the one `make build` just made),
// that one is used as it is: linking gait again per test package costs
// tens of seconds on a busy machine.
func Build() (path string, cleanup func(), err error) {
	if p := os.Getenv("GAIT_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", nil, fmt.Errorf("GAIT_BIN: %w", err)
		}
		return p, func() {}, nil
	}
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

// StartReady starts cmd and waits for the first line it writes to stdout,
// which must begin with ready (a long-running command announcing that it
// serves, such as "mounted DIR" or "up ID"); it returns the rest of that
// line. A command that exits or says something else first is killed.
func StartReady(cmd *exec.Cmd, ready string) (string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ready) {
		cmd.Process.Kill()
		cmd.Wait()
		return "", fmt.Errorf("%s: want a line starting %q, got %q (%v)", cmd.Path, ready, line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, ready)), nil
}
