package limp

import (
	"fmt"

	"github.com/gait-dev/gait/internal/testbed"
)

func init() {
	Register(Kind{
		Name:        "disk",
		Description: "reads, writes and fsyncs of the host's data directory (on limpfs) run at its baseline bandwidth / factor",
		Factor:      true,
		New:         func(Options) (Injector, error) { return Disk{}, nil },
	})
}

// Disk slows the host's limpfs; the testbed must have been made with
// Options.Disk.
type Disk struct{}

func (Disk) Kind() string { return "disk" }

func (Disk) Apply(h *testbed.Host, factor float64) error {
	if err := checkFactor("disk", h, factor); err != nil {
		return err
	}
	d := h.Disk()
	if d == nil {
		return fmt.Errorf("disk on %s: the host's data directory is not on limpfs (testbed made without Disk)", h.Name)
	}
	return d.SetFactor(factor)
}

func (Disk) Clear(h *testbed.Host) error {
	if d := h.Disk(); d != nil {
		return d.SetFactor(1)
	}
	return nil
}
