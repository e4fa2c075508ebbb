package limp

import "fmt"

func init() {
	Register(Kind{
		Name:        "partition",
		Description: "the host's link is down: no packet to or from any other host until cleared; its processes keep running",
		New:         func(Options) (Injector, error) { return Partition{}, nil },
	})
}

// Partition cuts the host off from every other host by taking the bridge
// end of its link down: packets either way are dropped, as with a pulled
// cable, while its processes keep running. It is all or nothing, so the
// factor is ignored. The link's shaping stays in place and holds again
// once Clear brings the link back up.
type Partition struct{}

func (Partition) Kind() string { return "partition" }

func (Partition) Apply(h Host, _ float64) error {
	if err := h.SetLinkUp(false); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	return nil
}

func (Partition) Clear(h Host) error {
	if err := h.SetLinkUp(true); err != nil {
		return fmt.Errorf("heal partition: %w", err)
	}
	return nil
}
