package agent

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gait-dev/gait/internal/cgroupcpu"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// DefaultMinFree is the free space preflight asks for under the root when
// the caller names none: a run's logs, data directories and limpfs
// backing files.
const DefaultMinFree = 1 << 30

// Checks answers preflight's questions about this machine: the shapers
// (tbf, htb), FUSE, the cgroup CPU controller, free disk under root, and
// the programs a scenario needs.
func Checks(root string, a CheckArgs) []Check {
	var out []Check
	for _, q := range []string{"tbf", "htb"} {
		c := Check{Name: "tc " + q}
		if err := tryQdisc(q); err != nil {
			c.Problem = fmt.Sprintf("cannot add a %s queueing discipline to a veth link (%v): NIC limpware cannot shape links (module sch_%s)", q, err, q)
		}
		out = append(out, c)
	}
	fuse := Check{Name: "fuse"}
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		fuse.Problem = fmt.Sprintf("cannot open /dev/fuse (%v): disk limpware needs FUSE (modprobe fuse; install fuse3)", err)
	} else {
		f.Close()
	}
	out = append(out, fuse)
	cg := Check{Name: "cgroup cpu"}
	switch c := cgroupcpu.Find(); {
	case c == nil:
		cg.Problem = "no cgroup CPU controller is mounted: CPU limpware cannot limit a host (enable the cpu controller of cgroup v2)"
	case !c.V2:
		cg.Detail = "cgroup v1 at " + c.Root
	default:
		cg.Detail = "cgroup v2 at " + c.Root
	}
	out = append(out, cg)
	minFree := a.MinFree
	if minFree == 0 {
		minFree = DefaultMinFree
	}
	disk := Check{Name: "free disk"}
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		disk.Problem = fmt.Sprintf("statfs %s: %v", root, err)
	} else if free := st.Bavail * uint64(st.Bsize); free < minFree {
		disk.Problem = fmt.Sprintf("%s has %d MiB free, want at least %d MiB", root, free>>20, minFree>>20)
	} else {
		disk.Detail = fmt.Sprintf("%d MiB free under %s", free>>20, root)
	}
	out = append(out, disk)
	for _, b := range a.Binaries {
		c := Check{Name: "binary " + b}
		if filepath.IsAbs(b) {
			if _, err := os.Stat(b); err != nil {
				c.Problem = fmt.Sprintf("%s is missing", b)
			} else {
				c.Detail = b
			}
		} else if p, err := exec.LookPath(b); err != nil {
			c.Problem = fmt.Sprintf("%s is not installed (not in the PATH sudo gives root)", b)
		} else {
			c.Detail = p
		}
		out = append(out, c)
	}
	return out
}

// tryQdisc adds a qdisc of kind tbf or htb to a veth pair inside a
// network namespace of its own, made for the check and unnamed, so the
// kernel removes it all once nothing holds it, even if the agent is
// killed meanwhile.
func tryQdisc(kind string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("new network namespace: %w", err)
			return
		}
		defer ns.Close()
		// Back to where the thread was before it serves anything else.
		// Should that fail, it stays locked and ends with this goroutine
		// (the main thread cannot end: it must never be the one to fail).
		defer func() {
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			}
		}()
		h, err := netlink.NewHandle()
		if err != nil {
			errc <- err
			return
		}
		defer h.Close()
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "check0"}, PeerName: "check1"}
		if err := h.LinkAdd(veth); err != nil {
			errc <- fmt.Errorf("veth: %w", err)
			return
		}
		l, err := h.LinkByName("check0")
		if err != nil {
			errc <- err
			return
		}
		attrs := netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
		var q netlink.Qdisc = netlink.NewHtb(attrs)
		if kind == "tbf" {
			q = &netlink.Tbf{QdiscAttrs: attrs, Rate: 1_000_000, Limit: 10_000, Buffer: 10_000}
		}
		errc <- h.QdiscAdd(q)
	}()
	return <-errc
}

// runLink is how the testbed names its links and bridges: g<run id>-...
var runLink = regexp.MustCompile(`^g([0-9a-f]{5})-`)

// Leftovers lists what gait left on this machine under root, one line a
// thing: state files of runs, mounts under root, processes running from
// or in root (except the agent itself, self), scratch files, and the
// links, network namespaces and cgroups (under the CPU cgroup cgroup,
// gait_cgroup) of the runs the state files name and of runs (ids made by
// the agent). An empty list is a clean machine.
func Leftovers(root, cgroup string, self int, runs []string) []string {
	var out []string
	ids := map[string]bool{}
	for _, id := range runs {
		ids[id] = true
	}
	states, _ := filepath.Glob(filepath.Join(StateDir(root), "*.json"))
	for _, p := range states {
		out = append(out, "state file "+p)
		ids[strings.TrimSuffix(filepath.Base(p), ".json")] = true
	}
	out = append(out, mountsUnder(root)...)
	out = append(out, procsUnder(root, self)...)
	if links, err := netlink.LinkList(); err == nil {
		for _, l := range links {
			if m := runLink.FindStringSubmatch(l.Attrs().Name); m != nil && ids[m[1]] {
				out = append(out, "link "+l.Attrs().Name)
			}
		}
	}
	for id := range ids {
		ns, _ := filepath.Glob("/run/netns/g" + id + "-*")
		for _, n := range ns {
			out = append(out, "network namespace "+filepath.Base(n))
		}
		if c := cgroupcpu.Find(); c != nil {
			cgs, _ := filepath.Glob(filepath.Join(c.Root, cmp.Or(cgroup, testbed.DefaultCgroup), "g"+id+"-*"))
			for _, g := range cgs {
				out = append(out, "cgroup "+g)
			}
		}
	}
	tmp, _ := os.ReadDir(TmpDir(root))
	for _, e := range tmp {
		out = append(out, "file "+filepath.Join(TmpDir(root), e.Name()))
	}
	slices.Sort(out)
	return out
}

func mountsUnder(root string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], root+"/") {
			out = append(out, "mount "+fields[4])
		}
	}
	return out
}

// procsUnder lists processes whose program or working directory is under
// root: the agent's binaries and the servers it started in data
// directories there.
func procsUnder(root string, self int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		for _, link := range []string{"exe", "cwd"} {
			target, err := os.Readlink(filepath.Join("/proc", e.Name(), link))
			if err == nil && strings.HasPrefix(target, root+"/") {
				comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
				out = append(out, fmt.Sprintf("process %d (%s, %s %s)", pid, strings.TrimSpace(string(comm)), link, target))
				break
			}
		}
	}
	return out
}
