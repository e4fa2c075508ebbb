package load

import (
	"fmt"
	"time"
)

// Spec is a workload as a user gives it, in a scenario's workload: block or
// on gait load's command line: the one place its defaults and its rules
// live. Start from NewSpec, set what the user gave, then Resolve. A zero
// field was not given and takes its default, except those NewSpec sets,
// whose zero is a value of its own (a seed of 0, empty values).
type Spec struct {
	Mix       Mix
	Keys      int
	KeyDist   KeyDist
	ValueSize int // bytes
	Preload   bool
	Seed      uint64

	// Closed loop: Clients; open loop: Rate and the rest.
	Clients          int
	Rate             Rate
	Poisson          bool
	MaxInFlight      int
	Calibrate        time.Duration // the calibration run of a rate given as a share
	CalibrateClients int

	Duration time.Duration
	Requests int
	Timeout  time.Duration // per request

	// Wait, when Replicas is set, makes every write wait for replicas.
	Wait Wait

	// Shape makes an arrival requests of several accesses; Rate and
	// Requests then count requests.
	Shape Shape
}

// Defaults of a workload.
const (
	DefaultKeys             = 1000
	DefaultValueSize        = 1 << 10
	DefaultSeed             = 1
	DefaultClients          = 8
	DefaultDuration         = 20 * time.Second
	DefaultTimeout          = 10 * time.Second
	DefaultCalibrate        = 3 * time.Second
	DefaultCalibrateClients = 16
	// MaxValueSize is the largest value a workload writes: Redis's own
	// limit on a bulk string.
	MaxValueSize = 512 << 20
	// MaxConnections bounds clients, max_in_flight and calibrate_clients:
	// each is a connection, and the ephemeral ports to one server run
	// out near 28,000.
	MaxConnections = 10000
)

// NewSpec returns a spec with nothing given yet.
func NewSpec() Spec {
	return Spec{ValueSize: DefaultValueSize, Preload: true, Seed: DefaultSeed}
}

// SpecError says which field of a workload is wrong, named as a scenario
// names it (max_in_flight); each front end spells the name its own way.
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

func specErrorf(field, format string, args ...any) error {
	return &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// OpenLoop reports whether the spec issues requests at a rate.
func (s Spec) OpenLoop() bool { return s.Rate.PerSecond > 0 || s.Rate.Share > 0 }

// Resolve checks s and fills in the defaults of what was not given. Every
// error is a *SpecError.
func (s Spec) Resolve() (Spec, error) {
	if t := s.Shape.Trace; len(t) > 0 && !s.OpenLoop() && s.Clients == 0 {
		// A trace is an open loop whose rate is the trace's own.
		span := max(t[len(t)-1].Seconds(), 1e-3)
		s.Rate = Rate{PerSecond: float64(len(t)*s.Shape.batch()) / span}
	}
	if err := s.check(); err != nil {
		return s, err
	}
	s.Keys = orDefault(s.Keys, DefaultKeys)
	if s.OpenLoop() {
		// A request in flight holds a connection per access of its widest phase.
		s.MaxInFlight = orDefault(s.MaxInFlight, max(4, DefaultMaxInFlight/s.Shape.Width()))
		if s.Rate.Share > 0 {
			s.Calibrate = orDefault(s.Calibrate, DefaultCalibrate)
			s.CalibrateClients = orDefault(s.CalibrateClients, DefaultCalibrateClients)
		}
	} else {
		s.Clients = orDefault(s.Clients, DefaultClients)
	}
	if s.Duration == 0 && s.Requests == 0 {
		s.Duration = DefaultDuration
	}
	s.Timeout = orDefault(s.Timeout, DefaultTimeout)
	return s, nil
}

// orDefault is v, or def when v was not given.
func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (s Spec) check() error {
	switch {
	case len(s.Mix) == 0:
		return specErrorf("op", "missing: the operation mix, like get:50,set:50")
	case s.Keys < 0:
		return specErrorf("keys", "%d: want a positive number of keys", s.Keys)
	case s.ValueSize < 0 || s.ValueSize > MaxValueSize:
		return specErrorf("value_size", "%s: want at most %s", FormatSize(int64(s.ValueSize)), FormatSize(MaxValueSize))
	case s.KeyDist.Zipf && !(s.KeyDist.S > 1):
		return specErrorf("key_dist", "zipf exponent %g: want a number > 1", s.KeyDist.S)
	case s.Clients < 0:
		return specErrorf("clients", "%d: want a positive number of clients", s.Clients)
	case s.Clients > 0 && s.OpenLoop():
		return specErrorf("rate", "give clients (closed loop) or rate (open loop), not both")
	case s.Duration < 0:
		return specErrorf("duration", "%v: must not be negative", s.Duration)
	case s.Requests < 0:
		return specErrorf("requests", "%d: must not be negative", s.Requests)
	case s.Timeout < 0:
		return specErrorf("timeout", "%v: must not be negative", s.Timeout)
	case s.Wait.Replicas < 0:
		return specErrorf("wait.replicas", "%d: want a positive number of replicas", s.Wait.Replicas)
	case s.Wait.Timeout < 0:
		return specErrorf("wait.timeout", "%v: must not be negative", s.Wait.Timeout)
	case s.Wait.Timeout > 0 && s.Wait.Replicas == 0:
		return specErrorf("wait.replicas", "missing: how many replicas each write waits for")
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"clients", s.Clients}, {"max_in_flight", s.MaxInFlight}, {"calibrate_clients", s.CalibrateClients}} {
		if c.n > MaxConnections {
			return specErrorf(c.field, "%d: at most %d (a connection each)", c.n, MaxConnections)
		}
	}
	for _, e := range s.Mix {
		if e.Weight <= 0 {
			return specErrorf("op", "weight of %s must be positive, got %d", e.Name, e.Weight)
		}
	}
	if err := s.Shape.check(); err != nil {
		return err
	}
	if s.Requests > 0 && s.Shape.Batch > s.Requests {
		return specErrorf("batch", "%d requests per arrival is more than the run's %d requests", s.Shape.Batch, s.Requests)
	}
	if s.Shape.FanOut() && s.Rate.Share > 0 {
		return specErrorf("rate", "a share of the maximum is calibrated with single accesses; give requests per second, like 10/s")
	}
	if s.OpenLoop() {
		return s.checkOpen()
	}
	for _, f := range []struct {
		name  string
		given bool
	}{{"poisson", s.Poisson}, {"max_in_flight", s.MaxInFlight != 0}, {"calibrate", s.Calibrate != 0},
		{"calibrate_clients", s.CalibrateClients != 0}, {"batch", s.Shape.Batch > 1}, {"arrivals", s.Shape.Trace != nil}} {
		if f.given {
			return specErrorf(f.name, "only applies to an open loop (rate)")
		}
	}
	return nil
}

func (s Spec) checkOpen() error {
	switch {
	case s.MaxInFlight < 0:
		return specErrorf("max_in_flight", "%d: want a positive number", s.MaxInFlight)
	case s.Calibrate < 0:
		return specErrorf("calibrate", "%v: want a positive duration", s.Calibrate)
	case s.CalibrateClients < 0:
		return specErrorf("calibrate_clients", "%d: want a positive number of clients", s.CalibrateClients)
	case s.Rate.Share == 0 && (s.Calibrate != 0 || s.CalibrateClients != 0):
		return specErrorf("calibrate", "only applies to a rate given as a share of the maximum, like 50%%")
	}
	return nil
}

// Workload is the part of the spec that says what each request does.
func (s Spec) Workload() Workload {
	return Workload{Mix: s.Mix, Keys: s.Keys, KeyDist: s.KeyDist, ValueSize: s.ValueSize}
}

// Config is the load run of a resolved spec; rate is the open loop's
// arrival rate per second, calibrated when the spec gives a share.
func (s Spec) Config(rate float64) Config {
	c := Config{Workload: s.Workload(), Clients: s.Clients, Duration: s.Duration, Requests: s.Requests,
		Timeout: s.Timeout, Seed: s.Seed, Shape: s.Shape}
	if s.OpenLoop() {
		c.Clients, c.Rate, c.Poisson, c.MaxInFlight = 0, rate, s.Poisson, s.MaxInFlight
	}
	return c
}
