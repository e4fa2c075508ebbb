package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// System is what every predictor and the simulator share: a service-time
// distribution per duplicate, a network delay added to every reply, a total
// Poisson arrival rate and the latency bound of the SLA.
type System struct {
	Service Distribution
	// Net is the network delay of one request-reply exchange with one
	// duplicate, drawn independently per duplicate; nil means none.
	Net   Distribution
	Rate  float64 // total arrivals per second
	Bound float64 // the SLA latency bound, seconds
	// Request is what one arrival asks: by default one access; with
	// phases or batches, Rate counts requests and Bound is a request's.
	Request Request
}

// Config is a deployment: Replicas groups (replication for throughput), each
// of Duplicates servers that all run every request of their group
// (replication for predictability).
type Config struct {
	Duplicates int `json:"duplicates"`
	Replicas   int `json:"replicas"`
}

// Nodes is the number of servers the configuration uses.
func (c Config) Nodes() int { return c.Duplicates * c.Replicas }

// Utilization of each server: every duplicate of a group sees all of the
// group's accesses, and a group sees 1/Replicas of the total.
func (s System) Utilization(c Config) float64 {
	return s.Rate * float64(s.Request.Accesses()) / float64(c.Replicas) * s.Service.Mean()
}

func (s System) net() Distribution {
	if s.Net == nil {
		return Constant{0}
	}
	return s.Net
}

// ErrUnstable marks a configuration whose queues grow without bound.
var ErrUnstable = errors.New("unstable: utilization >= 1")

// MaxNodes is the most servers one configuration (duplicates x replicas)
// may have: the simulator holds a queue per server and a histogram of
// 0..duplicates misses per batch, and spends duplicates steps per request.
const MaxNodes = 1 << 16

// InputError is an input outside the range where gait's answer holds.
// Input names it as this package does (service, net, rate, bound,
// duplicates, replicas, requests, nodes, ...), so that a command can name
// its own flag instead.
type InputError struct {
	Input  string // e.g. "rate"
	Value  string // the value given, as text
	Reason string // what is wrong and the valid range
}

func (e *InputError) Error() string {
	if e.Value == "" {
		return e.Input + ": " + e.Reason
	}
	return e.Input + " " + e.Value + ": " + e.Reason
}

func inputError(input string, value any, reason string, args ...any) error {
	v := ""
	switch x := value.(type) {
	case nil:
	case float64:
		v = strconv.FormatFloat(x, 'g', -1, 64)
	default:
		v = fmt.Sprint(x)
	}
	return &InputError{Input: input, Value: v, Reason: fmt.Sprintf(reason, args...)}
}

// Validate checks the inputs every computation needs.
func (s System) Validate() error {
	if err := firstErr(s.validateShape(), s.Request.Validate()); err != nil {
		return err
	}
	return validateRate(s.Rate)
}

func validateRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return inputError("rate", rate, "must be finite and > 0 requests/s")
	}
	return nil
}

// validateShape checks everything but the rate, which MaxRate searches for.
func (s System) validateShape() error {
	if s.Service == nil {
		return inputError("service", nil, "no service-time distribution")
	}
	m, m2 := s.Service.Mean(), s.Service.SecondMoment()
	if !(m > 0) || math.IsInf(m, 0) || math.IsNaN(m2) {
		return inputError("service", s.Service, "mean %v: want a finite mean > 0", m)
	}
	if nm := s.net().Mean(); !(nm >= 0) || math.IsInf(nm, 0) {
		return inputError("net", s.net(), "mean %v: want a finite mean >= 0", nm)
	}
	if !(s.Bound > 0) || math.IsInf(s.Bound, 0) {
		return inputError("bound", s.Bound, "must be finite and > 0")
	}
	if s.net().CDF(s.Bound) == 0 {
		return inputError("bound", fmtDur(s.Bound), "below every network delay (%s): no request can meet it", s.net())
	}
	return nil
}

// Validate checks a configuration: at least one duplicate and one replica,
// at most MaxNodes servers.
func (c Config) Validate() error {
	if err := validateCount("duplicates", c.Duplicates); err != nil {
		return err
	}
	if err := validateCount("replicas", c.Replicas); err != nil {
		return err
	}
	if c.Duplicates > MaxNodes/c.Replicas {
		return inputError("duplicates", c.Duplicates, "%d duplicates x %d replicas is more than %d nodes", c.Duplicates, c.Replicas, MaxNodes)
	}
	return nil
}

func validateCount(input string, n int) error {
	if n < 1 || n > MaxNodes {
		return inputError(input, n, "want 1 to %d", MaxNodes)
	}
	return nil
}

// ParseMixes reads mixes as the thesis names them, duplicates x replicas:
// "1x4,2x2,4x1".
func ParseMixes(s string) ([]Config, error) {
	var out []Config
	for _, f := range strings.Split(s, ",") {
		d, r, ok := strings.Cut(strings.TrimSpace(f), "x")
		dn, err1 := strconv.Atoi(d)
		rn, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mix %q: want DUPLICATESxREPLICAS, e.g. 2x2", f)
		}
		c := Config{Duplicates: dn, Replicas: rn}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("mix %q: %w", f, err)
		}
		out = append(out, c)
	}
	return out, nil
}
