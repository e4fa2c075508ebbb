package limpfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// fusectl is where the kernel lists FUSE connections, each with an abort
// file; Debian does not always mount it.
const fusectl = "/sys/fs/fuse/connections"

// abort ends the FUSE connection mounted on path, if there is one:
// every request waiting on it fails at once, so processes blocked on a
// dead server can die.
func abort(path string) error {
	conn, ok, err := fuseConnection(path)
	if err != nil || !ok {
		return err
	}
	if err := abortConnection(conn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// abortConnection ends FUSE connection conn (see fuseConnection).
func abortConnection(conn string) error {
	if _, err := os.Stat(filepath.Join(fusectl, conn)); err != nil {
		if err := syscall.Mount("fusectl", fusectl, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl to abort: %w", err)
		}
	}
	f := filepath.Join(fusectl, conn, "abort")
	if err := os.WriteFile(f, []byte("1"), 0o200); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("abort FUSE connection %s: %w", conn, err)
	}
	return nil
}

// fuseConnection finds the FUSE mount on path and returns its connection
// number, the minor of its device.
func fuseConnection(path string) (conn string, ok bool, err error) {
	m, ok, err := mountAt(path)
	if err != nil || !ok || (m.fstype != "fuse" && !strings.HasPrefix(m.fstype, "fuse.")) {
		return "", false, err
	}
	_, minor, _ := strings.Cut(m.dev, ":")
	if _, err := strconv.Atoi(minor); err != nil {
		return "", false, fmt.Errorf("mount %s: bad device %q", path, m.dev)
	}
	return minor, true, nil
}

// mountEntry is a line of /proc/self/mountinfo.
type mountEntry struct {
	dev, fstype, source string
}

// mountAt returns the last (topmost) mount on path in
// /proc/self/mountinfo.
func mountAt(path string) (m mountEntry, ok bool, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return m, false, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	path = filepath.Clean(path)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		pre, post, found := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !found || len(a) < 5 || len(b) < 2 || unescape(a[4]) != path {
			continue
		}
		m, ok = mountEntry{dev: a[2], fstype: b[0], source: unescape(b[1])}, true
	}
	return m, ok, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
