package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// Spread is one run's hosts placed across machines, round robin (h0 on
// the first machine, h1 on the second, ...), each machine's a testbed of
// its own, all joined with this machine by one VXLAN overlay: the
// control node's clients reach every host through its bridge, and every
// host reaches every other, whatever machine it is on.
type Spread struct {
	// Bridge is this machine's part: a testbed of no hosts whose bridge
	// is on the overlay. Files of the run here (its output) are recorded
	// with it, so they go with it.
	Bridge *testbed.Testbed
	// Testbeds are the machines' testbeds, in the machines' order.
	Testbeds []*Testbed
	// Hosts are the run's hosts in order, h0 first.
	Hosts []*Host
}

// SpreadOptions say what each machine's testbed is like.
type SpreadOptions struct {
	Bandwidth uint64 // each host's link in bit/s; 0 for the default
	Disk      bool   // limpfs under each host's data directory
	// DiskBandwidth (byte/s) and DiskLatency are the limpfs disk's;
	// Emulate makes every data directory an emulating store.
	DiskBandwidth float64
	DiskLatency   time.Duration
	Emulate       bool
	StateDir      string // this machine's testbed state directory; empty for the default
}

// SpreadHosts places n hosts across the machines and joins them and this
// machine into one overlay. Subnets are chosen so that none is used on
// this machine or by another of the run's testbeds; the overlay's id
// comes from the bridge's run id. On error, everything made is taken
// down.
func SpreadHosts(ctx context.Context, ms []*Machine, n int, o SpreadOptions) (sp *Spread, err error) {
	if len(ms) == 0 {
		return nil, errors.New("spread: no machine")
	}
	if each := (n + len(ms) - 1) / len(ms); each > testbed.MaxHosts {
		return nil, fmt.Errorf("spread: %d hosts over %d machines is %d on a machine, more than its testbed holds (%d); add machines", n, len(ms), each, testbed.MaxHosts)
	}
	bridge, err := testbed.Up(testbed.Options{BridgeOnly: true, StateDir: o.StateDir})
	if err != nil {
		return nil, fmt.Errorf("spread: this machine's bridge: %w", err)
	}
	sp = &Spread{Bridge: bridge}
	defer func() {
		if err != nil {
			sp.Close()
			sp = nil
		}
	}()
	avoid, err := testbed.UsedSubnets(o.StateDir)
	if err != nil {
		return sp, err
	}
	avoid = append(avoid, bridge.Subnet)
	used := ms[:min(n, len(ms))]
	for k, m := range used {
		count := n / len(ms)
		if k < n%len(ms) {
			count++
		}
		a := agent.UpArgs{Hosts: count, Bandwidth: o.Bandwidth, Disk: o.Disk,
			DiskBandwidth: o.DiskBandwidth, DiskLatency: o.DiskLatency, Emulate: o.Emulate}
		for _, p := range avoid {
			a.Avoid = append(a.Avoid, p.String())
		}
		tb, err := m.Up(ctx, a)
		if err != nil {
			return sp, err
		}
		sp.Testbeds = append(sp.Testbeds, tb)
		avoid = append(avoid, tb.Subnet)
	}
	for i := range n {
		sp.Hosts = append(sp.Hosts, sp.Testbeds[i%len(used)].Hosts[i/len(used)])
	}
	id, err := strconv.ParseUint(bridge.ID, 16, 23)
	if err != nil {
		return sp, fmt.Errorf("overlay id of run %s: %w", bridge.ID, err)
	}
	return sp, join(ctx, bridge, sp.Testbeds, uint32(id)+1)
}

// join makes the overlay of VXLAN id vni: this machine's bridge and each
// machine's testbed, each with every other as a peer, at the addresses
// the SSH connections use (this machine's as each machine sees it).
func join(ctx context.Context, bridge *testbed.Testbed, tbs []*Testbed, vni uint32) error {
	var peers []netip.Addr
	var subnets []netip.Prefix
	for _, tb := range tbs {
		addr, err := tb.Machine.peerAddr()
		if err != nil {
			return err
		}
		peers = append(peers, addr)
		subnets = append(subnets, tb.Subnet)
	}
	if err := bridge.Overlay(vni, peers, subnets); err != nil {
		return err
	}
	if err := bridge.Reach(subnets); err != nil {
		return err
	}
	for i, tb := range tbs {
		self, err := tb.Machine.selfAddr()
		if err != nil {
			return err
		}
		a := agent.OverlayArgs{VNI: vni, Peers: []string{self.String()}, Subnets: []string{bridge.Subnet.String()}}
		for j, other := range tbs {
			if j != i {
				a.Peers = append(a.Peers, peers[j].String())
				a.Subnets = append(a.Subnets, other.Subnet.String())
			}
		}
		if err := tb.Machine.Call(ctx, "overlay", tb.ID, "", a, nil); err != nil {
			return err
		}
	}
	return nil
}

// peerAddr is the machine's address as this machine reaches it: its end
// of the SSH connection (an inventory may name it by host name; VXLAN
// needs an IP address).
func (m *Machine) peerAddr() (netip.Addr, error) { return tcpAddr(m.Name, m.client.RemoteAddr()) }

// selfAddr is this machine's address as the machine sees it: this end of
// its SSH connection.
func (m *Machine) selfAddr() (netip.Addr, error) { return tcpAddr(m.Name, m.client.LocalAddr()) }

func tcpAddr(machine string, a net.Addr) (netip.Addr, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("overlay: the connection to %s has no IP address (%v)", machine, a)
	}
	ap := ta.AddrPort()
	return ap.Addr().Unmap(), nil
}

// Members are the hosts as a driver takes them, named h0, h1, ... in
// the run's order. Their servers' logs stay on their machines until
// FetchLogs.
func (sp *Spread) Members(string) []systems.Host {
	out := make([]systems.Host, len(sp.Hosts))
	for i, h := range sp.Hosts {
		out[i] = h.Member(fmt.Sprintf("h%d", i))
	}
	return out
}

// Local is this machine's part of the run: its bridge's testbed.
func (sp *Spread) Local() *testbed.Testbed { return sp.Bridge }

// Limp returns the host the run names name (h3) for the injectors, or
// nil. Its events name it by the run's name and where it is: h3 (m1/h1).
func (sp *Spread) Limp(name string) limp.Host {
	for i, h := range sp.Hosts {
		if fmt.Sprintf("h%d", i) == name {
			return placed{h, name}
		}
	}
	return nil
}

// placed is a host under the run's name for it.
type placed struct {
	*Host
	name string
}

func (p placed) HostName() string { return p.name + " (" + p.Host.HostName() + ")" }

// FetchLogs copies each host's log directory from its machine into
// dir/<host>/log, as a local run keeps its servers' logs.
func (sp *Spread) FetchLogs(dir string) error {
	errs := make([]error, len(sp.Hosts))
	var wg sync.WaitGroup
	for i, h := range sp.Hosts {
		wg.Go(func() {
			tb := sp.testbedOf(h)
			errs[i] = h.m.fetch(tb.Dir, h.Name+"/log", filepath.Join(dir, fmt.Sprintf("h%d", i)))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (sp *Spread) testbedOf(h *Host) *Testbed {
	for _, tb := range sp.Testbeds {
		if tb.Machine == h.m && tb.ID == h.run {
			return tb
		}
	}
	return nil
}

// Close takes every machine's testbed down, then this machine's bridge.
func (sp *Spread) Close() error {
	errs := make([]error, len(sp.Testbeds)+1)
	var wg sync.WaitGroup
	for i, tb := range sp.Testbeds {
		wg.Go(func() { errs[i] = tb.Close() })
	}
	wg.Wait()
	errs[len(sp.Testbeds)] = sp.Bridge.Close()
	return errors.Join(errs...)
}
