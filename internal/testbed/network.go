package testbed

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The smallest and largest rates a link can be shaped to, in bit/s.
const (
	MinBandwidth = 8_000
	MaxBandwidth = 100_000_000_000
)

// netnsDir is where named network namespaces live, as for `ip netns`.
const netnsDir = "/run/netns"

// hostIfName is the host's end of its veth pair, inside its namespace.
const hostIfName = "eth0"

// mtuBytes is the largest frame tbf must pass: veth's MTU plus the
// Ethernet header tbf counts.
const mtuBytes = 1500 + 14

// queueFrames is the length of a link's queue.
const queueFrames = 1000

// newNamespace creates a named network namespace (as `ip netns add`
// does) and returns a handle to it. Creating one switches the calling
// thread into it, so that happens on a locked thread of a goroutine of its
// own that switches back before it unlocks.
func newNamespace(name string) (netns.NsHandle, error) {
	type result struct {
		h   netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("current namespace: %w", err)}
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if rerr := netns.Set(orig); rerr != nil {
			// The thread stays locked and dies with this goroutine, so
			// nothing else ever runs in the wrong namespace.
			ch <- result{err: fmt.Errorf("return from namespace %s: %w", name, rerr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("create namespace %s: %w", name, err)
		}
		ch <- result{h: h, err: err}
	}()
	r := <-ch
	return r.h, r.err
}

// inNamespace runs f on a thread that is inside ns for f's duration.
// Sockets and processes f creates stay in ns afterwards.
func inNamespace(ns netns.NsHandle, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("enter namespace: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			ch <- fmt.Errorf("leave namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		ch <- ferr
	}()
	return <-ch
}

func newBridge(name string, addr netip.Prefix) (netlink.Link, error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("create bridge %s: %w", name, err)
	}
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
		return nil, fmt.Errorf("address %s on bridge %s: %w", addr, name, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("bring up bridge %s: %w", name, err)
	}
	return br, nil
}

// wireHost joins a host's namespace to the bridge with a veth pair and
// gives the inside end its address. The host gets no default route:
// it can reach its subnet and nothing else.
func wireHost(br netlink.Link, link string, ns netns.NsHandle, addr netip.Prefix) error {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: link, MasterIndex: br.Attrs().Index},
		PeerName:      hostIfName,
		PeerNamespace: netlink.NsFd(ns),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s: %w", link, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("bring up %s: %w", link, err)
	}
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in namespace of %s: %w", link, err)
	}
	defer nh.Close()
	lo, err := nh.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo of %s: %w", link, err)
	}
	if err := nh.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring up lo of %s: %w", link, err)
	}
	in, err := nh.LinkByName(hostIfName)
	if err != nil {
		return fmt.Errorf("find %s of %s: %w", hostIfName, link, err)
	}
	if err := nh.AddrAdd(in, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, link, err)
	}
	if err := nh.LinkSetUp(in); err != nil {
		return fmt.Errorf("bring up %s of %s: %w", hostIfName, link, err)
	}
	return nil
}

// shape puts a token bucket of bps bit/s on the egress of link, through
// handle h (which names the namespace the link is in).
func shape(h *netlink.Handle, link string, bps uint64) error {
	l, err := h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("find link %s: %w", link, err)
	}
	if err := h.QdiscReplace(tbfFor(l.Attrs().Index, bps)); err != nil {
		return fmt.Errorf("shape %s to %d bit/s: %w", link, bps, err)
	}
	return nil
}

// tbfFor sizes a token bucket for bps. The bucket holds 2 ms of traffic,
// at least two full frames: enough that timer wake-ups at 100 Mbit/s and
// above do not cost throughput, small enough that at 100 kbit/s a burst
// does not distort a second's average. The queue holds 1000 frames, a
// NIC's default txqueuelen, whatever the rate: a limping NIC keeps its
// queue and so its queueing delay grows with the factor (0.12 s at
// 100 Mbit/s, 120 s at 100 kbit/s). A queue cut to a fixed time instead
// drops so often at low rates that TCP stalls in timeouts and delivers
// well below the link rate.
func tbfFor(linkIndex int, bps uint64) *netlink.Tbf {
	rate := bps / 8 // bytes per second
	burst := max(uint32(rate/500), 2*mtuBytes)
	limit := uint32(queueFrames * mtuBytes)
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: linkIndex,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Rate:   rate,
		Buffer: netlink.Xmittime(rate, burst),
		Limit:  limit,
	}
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// namespacePids lists the processes inside the named network namespace:
// whatever runs in a host, also what a user started there with `ip netns
// exec`, which is in none of gait's process groups or cgroups.
func namespacePids(name string) []int {
	ns, err := os.Stat(filepath.Join(netnsDir, name))
	if err != nil {
		return nil
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		if fi, err := os.Stat(filepath.Join(p, "ns", "net")); err == nil && os.SameFile(ns, fi) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			pids = append(pids, pid)
		}
	}
	return pids
}
