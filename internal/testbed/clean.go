package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Clean removes what runs recorded in stateDir ("" means DefaultStateDir)
// left behind: runs whose owning process is gone, or every run when all is
// set. DefaultStateDir includes the runs it refers to elsewhere, but only
// those whose owner is gone: --all means this state directory's runs. It
// returns the ids of the runs it removed.
func Clean(stateDir string, all bool) ([]string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if _, err := os.Stat(stateDir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	unlock, err := lockMachine()
	if err != nil {
		return nil, err
	}
	defer unlock()
	states, err := listStates(stateDir)
	if err != nil {
		return nil, err
	}
	if stateDir == DefaultStateDir {
		elsewhere, err := referencedStates()
		if err != nil {
			return nil, err
		}
		for _, s := range elsewhere {
			if !s.live() {
				states = append(states, s)
			}
		}
	}
	var cleaned []string
	var errs []error
	for _, s := range states {
		if s.live() && !all {
			continue
		}
		if err := teardown(s); err != nil {
			errs = append(errs, fmt.Errorf("clean run %s: %w", s.ID, err))
			continue
		}
		cleaned = append(cleaned, s.ID)
	}
	return cleaned, errors.Join(errs...)
}

// teardown undoes everything s records, in the reverse order of
// creation, and then removes its state file and the reference to it.
// Each step tolerates things that are already gone, so it can be run
// again after a partial failure.
func teardown(s *state) error {
	var errs []error
	killAll(s)
	for _, m := range s.Mounts {
		if err := limpfs.Unmount(m); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range s.Cgroups {
		if err := removeCgroup(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := deleteLinks(s); err != nil {
		errs = append(errs, err)
	}
	for _, name := range s.Namespaces {
		if err := deleteNamespace(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range s.Dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	for _, d := range slices.Backward(s.Made) {
		os.Remove(d) // only if empty: what else is there is not the run's
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(statePath(s.dir, s.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	if s.dir != DefaultStateDir {
		if err := os.Remove(refPath(s.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove reference: %w", err)
		}
	}
	return nil
}

// killAll sends SIGKILL to every recorded process (its whole process
// group) and to whatever else sits in the run's cgroups or namespaces,
// then waits a little for them to be gone so their namespaces and mounts
// can go too.
func killAll(s *state) {
	var pids []int
	for _, p := range s.Procs {
		if p.alive() {
			syscall.Kill(-p.Pid, syscall.SIGKILL)
			syscall.Kill(p.Pid, syscall.SIGKILL)
			pids = append(pids, p.Pid)
		}
	}
	for _, c := range s.Cgroups {
		pids = append(pids, cgroupPids(c)...)
	}
	for _, ns := range s.Namespaces {
		pids = append(pids, namespacePids(ns)...)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(pids, 5*time.Second)
}

// waitGone waits until none of pids runs, for at most timeout.
func waitGone(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for procstat.Running(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s still runs after %s", describePids([]int{pid}), timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// describePids names processes for a person: "etcd (pid 123), sleep (pid 456)".
func describePids(pids []int) string {
	var parts []string
	for _, pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		parts = append(parts, fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), pid))
	}
	return strings.Join(parts, ", ")
}

// deleteLinks deletes the run's links and bridge, inside the network
// namespace the run was made in. When that namespace is gone, so are they.
func deleteLinks(s *state) error {
	del := func() error {
		var errs []error
		for _, name := range append(append([]string{}, s.Links...), s.Bridge) {
			errs = append(errs, deleteLink(name))
		}
		return errors.Join(errs...)
	}
	if s.Netns == "" || s.Netns == currentNetns() {
		return del()
	}
	ns, err := netns.GetFromName(s.Netns)
	if err != nil {
		return nil
	}
	defer ns.Close()
	return inNamespace(ns, del)
}

func deleteLink(name string) error {
	if name == "" {
		return nil
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("find link %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

// deleteNamespace undoes `ip netns add`. Unlike netns.DeleteNamed it
// also removes a name whose mount is already gone (after a reboot, as
// /run may be on disk).
func deleteNamespace(name string) error {
	path := filepath.Join(netnsDir, name)
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !isGone(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}

func isGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT)
}
