package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/limp"
)

// Event is something the fault schedule did during a run, at T seconds
// after the workload started (a fault due at 0 is applied just before).
type Event struct {
	T      float64 `json:"t"`
	Action string  `json:"action"` // apply or clear
	Fault  string  `json:"fault"`
	Factor float64 `json:"factor,omitempty"`
	Target string  `json:"target"`         // as the scenario names it
	Host   string  `json:"host,omitempty"` // what it was resolved to
	Role   string  `json:"role,omitempty"` // the host's role then
	Error  string  `json:"error,omitempty"`
}

func (e Event) String() string {
	what := e.Fault
	if e.Factor > 0 {
		what += " " + FormatFactor(e.Factor) + "x"
	}
	s := fmt.Sprintf("%.1fs: %s %s on %s", e.T, e.Action, what, e.Target)
	if e.Host != "" && e.Host != e.Target {
		s += " (" + strings.TrimSpace(e.Host+" "+e.Role) + ")"
	}
	if e.Error != "" {
		s += " failed: " + e.Error
	}
	return s
}

// schedule runs a step's faults with limp.Run, resolving each target by
// role when the fault strikes, and keeps what happened.
type schedule struct {
	lr     *liveRun
	faults []Injection

	mu      sync.Mutex
	t0      time.Time // the workload's start, once known
	pending []Event   // recorded before t0 was known
	events  []Event
	roles   []string // per fault: the role its target had when resolved
	active  []bool
	due     int           // faults due at 0 not yet applied
	ready   chan struct{} // closed once they are
	cancel  context.CancelFunc
	done    chan struct{}
}

func newSchedule(lr *liveRun, faults []Injection) *schedule {
	return &schedule{lr: lr, faults: faults, roles: make([]string, len(faults)), active: make([]bool, len(faults)),
		ready: make(chan struct{}), done: make(chan struct{})}
}

// start launches the schedule and returns once the faults due at 0 are in
// place (applied or failed), so the workload meets them from its first
// request.
func (s *schedule) start(ctx context.Context) error {
	var faults []limp.Fault
	for i, f := range s.faults {
		inj, err := limp.New(f.Kind, limp.Options{})
		if err != nil {
			return err
		}
		faults = append(faults, limp.Fault{Injector: inj, Target: s.target(ctx, i),
			Factor: max(f.Factor, 1), At: f.At, For: f.For})
		if f.At == 0 {
			s.due++
		}
	}
	if s.due == 0 {
		close(s.ready)
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		limp.Run(sctx, faults, s.record) // every failure is also an event
	}()
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// started sets the workload's start, which event times count from.
func (s *schedule) started(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t0 = t
	for _, ev := range s.pending {
		s.log(ev)
	}
	s.pending = nil
}

// target resolves fault i's target when limp applies it.
func (s *schedule) target(ctx context.Context, i int) limp.Target {
	return func() (limp.Host, error) {
		name, role, err := s.lr.resolve(ctx, s.faults[i].Target)
		if err != nil {
			return nil, err
		}
		h := s.lr.place.Limp(name)
		if h == nil {
			return nil, fmt.Errorf("%s resolved to %s, which is no host of the testbed", s.faults[i].Target, name)
		}
		s.mu.Lock()
		s.roles[i] = role
		s.mu.Unlock()
		return h, nil
	}
}

// record keeps one of limp's events. limp.Run calls it from its goroutine,
// in order; the event's Fault indexes s.faults, as the list given to
// limp.Run is in the same order.
func (s *schedule) record(e limp.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := e.Fault
	f := s.faults[i]
	ev := Event{Action: e.Action, Fault: e.Kind, Factor: f.Factor, Target: f.Target, Host: e.Host}
	if e.Err != nil {
		ev.Error = e.Err.Error()
	}
	if e.Action == "apply" {
		ev.Role = s.roles[i]
		s.active[i] = e.Err == nil
		if f.At == 0 && s.due > 0 {
			if s.due--; s.due == 0 {
				close(s.ready)
			}
		}
	} else {
		s.active[i] = false
	}
	ev.T = e.Time.Sub(s.t0).Seconds()
	if s.t0.IsZero() {
		ev.T = 0
		s.pending = append(s.pending, ev)
	} else {
		s.log(ev)
	}
	s.events = append(s.events, ev)
}

func (s *schedule) log(ev Event) { s.lr.logf("  %s", ev) }

// stop ends the schedule: limp clears every fault still applied (a crashed
// host is restarted) before it returns.
func (s *schedule) stop() []Event {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// probe emits, every second, each fault's factor while it is applied and
// 0 otherwise (1 for a crash), so the time series shows when faults struck.
func (s *schedule) probe(emit func(string, float64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		v := 0.0
		if s.active[i] {
			v = max(f.Factor, 1)
		}
		emit(fmt.Sprintf("gait_fault{fault=%s,target=%s}", f.Kind, f.Target), v)
	}
}

// faultNames joins the kinds and targets of a scenario's faults: "nic", "leader".
func faultNames(fs []Fault) (kinds, targets string) {
	var k, t []string
	for _, f := range fs {
		k = append(k, f.Kind)
		t = append(t, f.Target)
	}
	return strings.Join(k, "+"), strings.Join(t, "+")
}

// FaultNames joins the kinds and targets of the scenario's faults, as
// run.json's fault and target do.
func (s *Scenario) FaultNames() (kinds, targets string) { return faultNames(s.Inject) }
