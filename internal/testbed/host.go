package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/vishvananda/netlink"
)

// ErrNoDisk means the host's data directory is not on limpfs (the
// testbed was made without Options.Disk), so its disk cannot be slowed.
var ErrNoDisk = errors.New("the host's data directory is not on limpfs (testbed made without Disk)")

// HostName returns the host's name (h0, h1, ...), as limp.Host asks.
func (h *Host) HostName() string { return h.Name }

// Do runs f inside the host's network namespace. Sockets f opens stay
// in the namespace, so a listener or connection made in f can be used
// from any goroutine afterwards.
func (h *Host) Do(f func() error) error {
	return inNamespace(h.ns, f)
}

// SetBandwidth shapes the host's link to bps bit/s in both directions:
// on the egress of the veth end inside the host (what it sends) and of
// the end on the bridge (what it receives).
func (h *Host) SetBandwidth(bps uint64) error {
	if bps < MinBandwidth || bps > MaxBandwidth {
		return fmt.Errorf("bandwidth of %s: %d bit/s is not between %d and %d", h.Name, bps, uint64(MinBandwidth), uint64(MaxBandwidth))
	}
	if err := h.tb.record(func(s *state) {
		q := h.Link + ":tbf"
		for _, have := range s.Qdiscs {
			if have == q {
				return
			}
		}
		s.Qdiscs = append(s.Qdiscs, q, h.Namespace+"/"+hostIfName+":tbf")
	}); err != nil {
		return err
	}
	root, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer root.Close()
	if err := shape(root, h.Link, bps); err != nil {
		return err
	}
	inside, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", h.Namespace, err)
	}
	defer inside.Close()
	if err := shape(inside, hostIfName, bps); err != nil {
		return fmt.Errorf("in %s: %w", h.Namespace, err)
	}
	h.mu.Lock()
	h.bandwidth = bps
	h.mu.Unlock()
	return nil
}

// Bandwidth returns the rate the host's link is shaped to, in bit/s.
func (h *Host) Bandwidth() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bandwidth
}

// Baseline returns the testbed's link rate, what factors divide.
func (h *Host) Baseline() uint64 { return h.tb.Bandwidth }

// Disk returns the host's limpfs, or nil when the testbed has none.
func (h *Host) Disk() *limpfs.FS { return h.disk }

// SetDiskFactor slows the host's limpfs by factor (1 is its baseline);
// ErrNoDisk when the host has none.
func (h *Host) SetDiskFactor(factor float64) error {
	if h.disk == nil {
		return ErrNoDisk
	}
	return h.disk.SetFactor(factor)
}

// HasCPUCgroup reports whether the host's processes run in a CPU cgroup
// that LimitCPU can limit.
func (h *Host) HasCPUCgroup() bool { return h.cgroup != "" }

// cgroupProcs is the file that moves a process into the host's cgroup,
// or "" when the host has none.
func (h *Host) cgroupProcs() string {
	if h.cgroup == "" {
		return ""
	}
	return filepath.Join(h.cgroup, "cgroup.procs")
}

// LimitCPU lets the host's processes use cpus CPUs together (0.1 is a
// tenth of one CPU); 0 removes the limit. It returns ErrNoCPUCgroup when
// the machine has no CPU controller.
func (h *Host) LimitCPU(cpus float64) error {
	if h.cgroup == "" {
		return ErrNoCPUCgroup
	}
	if !(cpus >= 0) {
		return fmt.Errorf("cpu limit of %s: %g is not a share >= 0", h.Name, cpus)
	}
	if err := findCPUController().setQuota(h.cgroup, cpus); err != nil {
		return fmt.Errorf("cpu limit of %s: %w", h.Name, err)
	}
	return nil
}

// Procs returns the processes started on the host.
func (h *Host) Procs() []*Proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Proc(nil), h.procs...)
}

// SignalAll sends sig to every running process of the host (each one's
// process group).
func (h *Host) SignalAll(sig syscall.Signal) error {
	var errs []error
	for _, p := range h.Procs() {
		errs = append(errs, p.Signal(sig))
	}
	return errors.Join(errs...)
}

// CPUTime returns the CPU time the host's processes (all their threads,
// not their children) have used, from /proc/PID/task/TID/schedstat,
// which counts nanoseconds where /proc/PID/stat counts 10 ms ticks.
func (h *Host) CPUTime() time.Duration {
	var total time.Duration
	for _, p := range h.Procs() {
		if !p.Running() {
			continue
		}
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.Pid()))
		for _, f := range files {
			var ns int64
			if data, err := os.ReadFile(f); err == nil {
				if _, err := fmt.Sscan(string(data), &ns); err == nil {
					total += time.Duration(ns)
				}
			}
		}
	}
	return total
}

// RestartStopped starts again every process of the host that is not
// running (after KillAll, say), each with its own spec.
func (h *Host) RestartStopped() error {
	var errs []error
	for _, p := range h.Procs() {
		if p.Running() {
			continue
		}
		// Someone else may have restarted it meanwhile; that is fine.
		if err := p.Restart(); err != nil && !p.Running() {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KillAll kills every process of the host with SIGKILL, also what they
// forked and whatever else runs in its cgroup or namespace (a process a
// user started with `ip netns exec`), and waits for them to exit.
func (h *Host) KillAll() error {
	var errs []error
	for _, p := range h.Procs() {
		if err := p.Signal(syscall.SIGKILL); err != nil {
			errs = append(errs, err)
		}
	}
	others := slices.Concat(cgroupPids(h.cgroup), namespacePids(h.Namespace))
	for _, pid := range others {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill pid %d on %s: %w", pid, h.Name, err))
		}
	}
	for _, p := range h.Procs() {
		if err := p.wait(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := waitGone(others, 5*time.Second); err != nil {
		errs = append(errs, fmt.Errorf("on %s: %w", h.Name, err))
	}
	return errors.Join(errs...)
}

// running lists the host's processes that still run, its supervised ones
// and the others in its cgroup or namespace.
func (h *Host) running() []int {
	var pids []int
	for _, p := range h.Procs() {
		if p.Running() {
			pids = append(pids, p.Pid())
		}
	}
	for _, pid := range slices.Concat(cgroupPids(h.cgroup), namespacePids(h.Namespace)) {
		if procstat.Running(pid) && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// QueueStats describe one direction of a host's link: what its shaper
// sent and dropped, and what waits in its queue now.
type QueueStats struct {
	Bytes   uint64 // sent, Ethernet headers included
	Packets uint32 // sent
	Drops   uint32 // dropped because the queue was full
	Backlog uint32 // bytes waiting
}

// LinkStats returns the shapers' counters, Out for what the host sends
// and In for what it receives.
func (h *Host) LinkStats() (out, in QueueStats, err error) {
	root, err := netlink.NewHandle()
	if err != nil {
		return out, in, fmt.Errorf("netlink: %w", err)
	}
	defer root.Close()
	if in, err = queueStats(root, h.Link); err != nil {
		return out, in, err
	}
	inside, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return out, in, fmt.Errorf("netlink in %s: %w", h.Namespace, err)
	}
	defer inside.Close()
	out, err = queueStats(inside, hostIfName)
	return out, in, err
}

func queueStats(nh *netlink.Handle, link string) (QueueStats, error) {
	l, err := nh.LinkByName(link)
	if err != nil {
		return QueueStats{}, fmt.Errorf("find link %s: %w", link, err)
	}
	qs, err := nh.QdiscList(l)
	if err != nil {
		return QueueStats{}, fmt.Errorf("qdiscs of %s: %w", link, err)
	}
	for _, q := range qs {
		st := q.Attrs().Statistics
		if q.Type() != "tbf" || q.Attrs().Parent != netlink.HANDLE_ROOT || st == nil || st.Basic == nil || st.Queue == nil {
			continue
		}
		return QueueStats{Bytes: st.Basic.Bytes, Packets: st.Basic.Packets, Drops: st.Queue.Drops, Backlog: st.Queue.Backlog}, nil
	}
	return QueueStats{}, fmt.Errorf("link %s has no shaper", link)
}

// SetLinkUp sets the bridge end of the host's veth pair up or down. Down
// cuts the host off from every other host (and them from it) as a pulled
// cable would; its shapers stay in place for when the link comes back up.
func (h *Host) SetLinkUp(up bool) error {
	l, err := netlink.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("find link %s of %s: %w", h.Link, h.Name, err)
	}
	set, verb := netlink.LinkSetDown, "down"
	if up {
		set, verb = netlink.LinkSetUp, "up"
	}
	if err := set(l); err != nil {
		return fmt.Errorf("set link %s of %s %s: %w", h.Link, h.Name, verb, err)
	}
	return nil
}
