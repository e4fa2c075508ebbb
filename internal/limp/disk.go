package limp

import (
	"errors"
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

func (Disk) Apply(h Host, factor float64) error {
	if err := checkFactor("disk", h, factor); err != nil {
		return err
	}
	if err := h.SetDiskFactor(factor); err != nil {
		return fmt.Errorf("disk on %s: %w", h.HostName(), err)
	}
	return nil
}

// Clear brings the disk back to its baseline; a host without limpfs has
// nothing to clear.
func (Disk) Clear(h Host) error {
	if err := h.SetDiskFactor(1); err != nil && !errors.Is(err, testbed.ErrNoDisk) {
		return fmt.Errorf("disk on %s: %w", h.HostName(), err)
	}
	return nil
}
