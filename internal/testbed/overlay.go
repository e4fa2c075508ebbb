package testbed

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// vxlanPort is VXLAN's UDP port (IANA); vxlanOverhead is what VXLAN adds to
// a frame on the machine's own link, which hosts' MTUs leave room for.
const (
	vxlanPort     = 4789
	vxlanOverhead = 50
)

// Overlay joins the testbed to the testbeds of the same run on other
// machines: a VXLAN device of id vni on its bridge, whose unicast peers are
// the other machines' addresses, makes every host of every machine one
// Ethernet segment. Each host gets a route to each of the other testbeds'
// subnets through its link, and an MTU that leaves room for VXLAN's header.
// The device is recorded before it is made, so Close and Clean remove it.
func (tb *Testbed) Overlay(vni uint32, peers []netip.Addr, subnets []netip.Prefix) error {
	name := "g" + tb.ID + "-vx"
	if err := tb.record(func(s *state) { s.Links = append(s.Links, name) }); err != nil {
		return err
	}
	br, err := netlink.LinkByName("g" + tb.ID + "-br")
	if err != nil {
		return fmt.Errorf("overlay of %s: %w", tb.ID, err)
	}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: name, MasterIndex: br.Attrs().Index},
		VxlanId: int(vni), Port: vxlanPort, Learning: true}
	if err := netlink.LinkAdd(vx); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(vx); err != nil {
		return fmt.Errorf("bring up %s: %w", name, err)
	}
	for _, p := range peers {
		// An all-zero MAC entry floods unknown and broadcast frames to
		// the peer, so ARP finds hosts behind it.
		if err := netlink.NeighAppend(&netlink.Neigh{LinkIndex: vx.Attrs().Index, Family: unix.AF_BRIDGE,
			Flags: netlink.NTF_SELF, State: netlink.NUD_PERMANENT, HardwareAddr: make(net.HardwareAddr, 6), IP: p.AsSlice()}); err != nil {
			return fmt.Errorf("overlay peer %s on %s: %w", p, name, err)
		}
	}
	mtu := 1500 - vxlanOverhead
	for _, h := range tb.Hosts {
		if err := h.joinOverlay(mtu, subnets); err != nil {
			return err
		}
	}
	return nil
}

// Reach routes this machine's traffic to subnets (the overlay's testbeds
// on other machines) through the testbed's bridge, and reserves them in
// the run's state so that no later run here takes them. The routes go
// with the bridge.
func (tb *Testbed) Reach(subnets []netip.Prefix) error {
	if err := tb.record(func(s *state) {
		for _, p := range subnets {
			s.Reserved = append(s.Reserved, p.String())
		}
	}); err != nil {
		return err
	}
	br, err := netlink.LinkByName("g" + tb.ID + "-br")
	if err != nil {
		return fmt.Errorf("overlay of %s: %w", tb.ID, err)
	}
	for _, p := range subnets {
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: br.Attrs().Index, Dst: ipNet(p), Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("route to %s through %s: %w", p, br.Attrs().Name, err)
		}
	}
	return nil
}

func (h *Host) joinOverlay(mtu int, subnets []netip.Prefix) error {
	outside, err := netlink.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("overlay of %s: %w", h.Name, err)
	}
	if err := netlink.LinkSetMTU(outside, mtu); err != nil {
		return fmt.Errorf("overlay MTU of %s: %w", h.Link, err)
	}
	nh, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", h.Namespace, err)
	}
	defer nh.Close()
	in, err := nh.LinkByName(hostIfName)
	if err != nil {
		return fmt.Errorf("overlay of %s: %w", h.Name, err)
	}
	if err := nh.LinkSetMTU(in, mtu); err != nil {
		return fmt.Errorf("overlay MTU of %s: %w", h.Name, err)
	}
	for _, s := range subnets {
		if err := nh.RouteAdd(&netlink.Route{LinkIndex: in.Attrs().Index, Dst: ipNet(s), Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("route to %s on %s: %w", s, h.Name, err)
		}
	}
	return nil
}
