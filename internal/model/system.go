package model

import (
	"errors"
	"fmt"
	"math"
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
// group's arrivals, and a group sees 1/Replicas of the total.
func (s System) Utilization(c Config) float64 {
	return s.Rate / float64(c.Replicas) * s.Service.Mean()
}

func (s System) net() Distribution {
	if s.Net == nil {
		return Constant{0}
	}
	return s.Net
}

// ErrUnstable marks a configuration whose queues grow without bound.
var ErrUnstable = errors.New("unstable: utilization >= 1")

// Validate checks the inputs every computation needs.
func (s System) Validate() error {
	if err := s.validateShape(); err != nil {
		return err
	}
	if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
		return fmt.Errorf("rate %v: must be finite and > 0 requests/s", s.Rate)
	}
	return nil
}

// validateShape checks everything but the rate, which MaxRate searches for.
func (s System) validateShape() error {
	if s.Service == nil {
		return errors.New("no service-time distribution")
	}
	m, m2 := s.Service.Mean(), s.Service.SecondMoment()
	if !(m > 0) || math.IsInf(m, 0) || math.IsNaN(m2) {
		return fmt.Errorf("service %s: mean %v must be finite and > 0", s.Service, m)
	}
	if !(s.Bound > 0) || math.IsInf(s.Bound, 0) {
		return fmt.Errorf("bound %v: must be finite and > 0", s.Bound)
	}
	if s.net().CDF(s.Bound) == 0 {
		return fmt.Errorf("bound %s is below every network delay (%s): no request can meet it", fmtDur(s.Bound), s.net())
	}
	return nil
}

// Validate checks a configuration.
func (c Config) Validate() error {
	if c.Duplicates < 1 || c.Replicas < 1 {
		return fmt.Errorf("configuration %dx%d: duplicates and replicas must be >= 1", c.Duplicates, c.Replicas)
	}
	return nil
}
