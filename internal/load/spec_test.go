package load

import (
	"errors"
	"testing"
	"time"
)

func TestSpecDefaults(t *testing.T) {
	mix := Mix{{Name: "get", Weight: 1}}
	closed := NewSpec()
	closed.Mix = mix
	s, err := closed.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != DefaultClients || s.Duration != DefaultDuration || s.Timeout != DefaultTimeout || s.Keys != DefaultKeys ||
		s.ValueSize != DefaultValueSize || !s.Preload || s.MaxInFlight != 0 || s.Calibrate != 0 {
		t.Errorf("closed loop defaults: %+v", s)
	}
	open := NewSpec()
	open.Mix, open.Rate, open.Requests = mix, Rate{Share: 0.5}, 100
	if s, err = open.Resolve(); err != nil {
		t.Fatal(err)
	}
	if s.Clients != 0 || s.Duration != 0 || s.MaxInFlight != DefaultMaxInFlight || s.Calibrate != DefaultCalibrate ||
		s.CalibrateClients != DefaultCalibrateClients {
		t.Errorf("open loop defaults: %+v", s)
	}
	if c := s.Config(250); c.Rate != 250 || c.Clients != 0 || c.Requests != 100 {
		t.Errorf("open loop config: %+v", c)
	}
}

func TestSpecErrorsNameTheField(t *testing.T) {
	mix := Mix{{Name: "get", Weight: 1}}
	for field, change := range map[string]func(*Spec){
		"op":                func(s *Spec) { s.Mix = nil },
		"rate":              func(s *Spec) { s.Clients, s.Rate = 4, Rate{PerSecond: 10} },
		"poisson":           func(s *Spec) { s.Poisson = true },
		"max_in_flight":     func(s *Spec) { s.MaxInFlight = 3 },
		"calibrate":         func(s *Spec) { s.Rate, s.Calibrate = Rate{PerSecond: 10}, time.Second },
		"calibrate_clients": func(s *Spec) { s.CalibrateClients = 3 },
		"value_size":        func(s *Spec) { s.ValueSize = MaxValueSize + 1 },
		"key_dist":          func(s *Spec) { s.KeyDist = KeyDist{Zipf: true, S: 0.5} },
		"timeout":           func(s *Spec) { s.Timeout = -time.Second },
		"clients":           func(s *Spec) { s.Clients = MaxConnections + 1 },
	} {
		s := NewSpec()
		s.Mix = mix
		change(&s)
		_, err := s.Resolve()
		var se *SpecError
		if !errors.As(err, &se) || se.Field != field {
			t.Errorf("%s: got %v", field, err)
		}
	}
}
