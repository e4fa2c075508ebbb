package zookeeper

import (
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/linearize"
)

// For the testbed test (package zookeeper_test), which imports the
// gait-zookeeper driver, itself an importer of this package.

// NewWorkload is the porcupine workload of TestLinearizableWithFaults for
// clients on agents.
func NewWorkload(agents []string, clients int, pause time.Duration) *zkWorkload {
	return &zkWorkload{agents: agents, clients: clients, keys: 4, pause: pause,
		h: linearize.NewHistory(), counts: map[string]int{}, errors: map[string]int{}}
}

func (w *zkWorkload) Setup(t *testing.T)                     { w.setup(t) }
func (w *zkWorkload) Run(t *testing.T, stop <-chan struct{}) { w.run(t, stop) }
func (w *zkWorkload) Check(t *testing.T)                     { w.check(t) }
func SameData(t *testing.T, servers []string) (int, error)   { return sameData(t, servers) }
