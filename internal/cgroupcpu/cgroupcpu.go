// Package cgroupcpu finds the cgroup CPU controller (v2's cpu.max or v1's
// cpu.cfs_quota_us) and reads how long a cgroup's CPU quota has held its
// processes back. The testbed limits a host's CPU through it; a replica
// agent reads its own cgroup's throttling as a sign that its CPU limps.
package cgroupcpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Controller is where the cgroup CPU controller is mounted.
type Controller struct {
	Root string
	V2   bool // cgroup2 (cpu.max, throttled_usec); else v1 (cpu.cfs_quota_us, throttled_time)
}

var (
	findOnce sync.Once
	found    *Controller
)

// Find reads /proc/self/mountinfo once for a cgroup2 mount whose
// controllers include cpu, else a cgroup v1 mount of cpu; nil when there
// is neither.
func Find() *Controller {
	findOnce.Do(func() {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return
		}
		defer f.Close()
		var v1 *Controller
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			mnt, fstype, opts, ok := parseMountinfo(sc.Text())
			if !ok {
				continue
			}
			switch fstype {
			case "cgroup2":
				ctl, _ := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
				if HasWord(string(ctl), "cpu", " \n") {
					found = &Controller{Root: mnt, V2: true}
					return
				}
			case "cgroup":
				if v1 == nil && HasWord(opts, "cpu", ",") {
					v1 = &Controller{Root: mnt}
				}
			}
		}
		found = v1
	})
	return found
}

// parseMountinfo returns a mountinfo line's mount point, file system
// type and super options (see proc(5)).
func parseMountinfo(line string) (mnt, fstype, opts string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	if !found {
		return "", "", "", false
	}
	a, b := strings.Fields(pre), strings.Fields(post)
	if len(a) < 5 || len(b) < 3 {
		return "", "", "", false
	}
	return a[4], b[0], b[2], true
}

// HasWord tells whether word is one of the fields of s split at any of seps.
func HasWord(s, word, seps string) bool {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if w == word {
			return true
		}
	}
	return false
}

// SelfDir is the directory of the CPU cgroup this process runs in
// (DirOf).
func (c *Controller) SelfDir() (string, error) { return c.DirOf("self") }

// DirOf is the directory of the CPU cgroup process pid ("self": this one)
// runs in, from /proc/PID/cgroup: v2's single line ("0::/path"), or the v1
// line whose controllers include cpu ("4:cpu,cpuacct:/path").
func (c *Controller) DirOf(pid string) (string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return "", fmt.Errorf("find the cpu cgroup of process %s: %w", pid, err)
	}
	path, err := cgroupPath(string(data), c.V2)
	if err != nil {
		return "", fmt.Errorf("find the cpu cgroup of process %s: %w", pid, err)
	}
	return filepath.Join(c.Root, path), nil
}

// cgroupPath picks the CPU controller's path out of /proc/PID/cgroup.
func cgroupPath(data string, v2 bool) (string, error) {
	for _, line := range strings.Split(data, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" && parts[1] == "" || !v2 && HasWord(parts[1], "cpu", ",") {
			return parts[2], nil
		}
	}
	return "", errors.New("no cpu controller listed")
}

// Throttled reads how long, in all, the kernel has held the processes of
// the cgroup in dir back because they had spent its CPU quota: cpu.stat's
// throttled_usec (v2) or throttled_time (v1, nanoseconds). It counts per
// CPU, so a cgroup throttled on two CPUs at once gains twice the wall
// time. A cgroup without a quota is never throttled, however busy the
// machine.
func (c *Controller) Throttled(dir string) (time.Duration, error) {
	path := filepath.Join(dir, "cpu.stat")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read cpu throttling: %w", err)
	}
	d, err := parseThrottled(data, c.V2)
	if err != nil {
		return 0, fmt.Errorf("read cpu throttling from %s: %w", path, err)
	}
	return d, nil
}

func parseThrottled(data []byte, v2 bool) (time.Duration, error) {
	key, unit := "throttled_time", time.Nanosecond
	if v2 {
		key, unit = "throttled_usec", time.Microsecond
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(" "))
		if !ok || string(k) != key {
			continue
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return time.Duration(n) * unit, nil
	}
	return 0, fmt.Errorf("no %s", key)
}
