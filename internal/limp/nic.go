package limp

import (
	"fmt"

	"github.com/gait-dev/gait/internal/testbed"
)

func init() {
	Register(Kind{
		Name:        "nic",
		Description: "the host's link sends and receives at its baseline bandwidth / factor",
		Factor:      true,
		New:         func(Options) (Injector, error) { return NIC{}, nil },
	})
}

// NIC shapes the host's link, both directions, to baseline/factor.
type NIC struct{}

func (NIC) Kind() string { return "nic" }

func (NIC) Apply(h Host, factor float64) error {
	if err := checkFactor("nic", h, factor); err != nil {
		return err
	}
	bps := float64(h.Baseline()) / factor
	if bps < testbed.MinBandwidth {
		return fmt.Errorf("nic on %s: %d bit/s / %g is below the %d bit/s a link can be shaped to", h.HostName(), h.Baseline(), factor, testbed.MinBandwidth)
	}
	return h.SetBandwidth(uint64(bps))
}

func (NIC) Clear(h Host) error { return h.SetBandwidth(h.Baseline()) }
