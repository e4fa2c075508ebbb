package procstat

// Target is a process to sample and the label its metrics carry.
type Target struct {
	Label string
	PID   int
}

// Sampler turns successive readings of its targets into per-second metrics:
//
//	proc_cpu{proc=L}                 CPU seconds used per second (1 = one core busy)
//	proc_rss_bytes{proc=L}           resident memory
//	proc_threads{proc=L}             threads
//	proc_ctx_voluntary{proc=L}       voluntary context switches per second
//	proc_ctx_involuntary{proc=L}     involuntary context switches per second
//	proc_faults_minor{proc=L}        minor page faults per second
//	proc_faults_major{proc=L}        major page faults per second
//
// A target that cannot be read (it exited, or is not ours to read) is skipped
// until it can be read again.
type Sampler struct {
	targets []Target
	prev    []*Reading
}

// NewSampler takes the first readings, which later rates are relative to.
func NewSampler(targets ...Target) *Sampler {
	s := &Sampler{targets: targets, prev: make([]*Reading, len(targets))}
	for i, t := range targets {
		if r, err := Read(t.PID); err == nil {
			s.prev[i] = &r
		}
	}
	return s
}

// Sample reads every target and emits its metrics; its signature fits load.Probe.
func (s *Sampler) Sample(emit func(name string, value float64)) {
	for i, t := range s.targets {
		r, err := Read(t.PID)
		if err != nil {
			s.prev[i] = nil
			continue
		}
		if p := s.prev[i]; p != nil {
			emitDelta(emit, t.Label, *p, r)
		}
		s.prev[i] = &r
	}
}

func emitDelta(emit func(string, float64), label string, p, r Reading) {
	dt := r.Time.Sub(p.Time).Seconds()
	if dt <= 0 {
		return
	}
	name := func(m string) string { return m + "{proc=" + label + "}" }
	// Thread exits make summed counters shrink; count that as no activity.
	rate := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return float64(b-a) / dt
	}
	emit(name("proc_cpu"), max(0, (r.CPU-p.CPU).Seconds())/dt)
	emit(name("proc_rss_bytes"), float64(r.RSS))
	emit(name("proc_threads"), float64(r.Threads))
	emit(name("proc_ctx_voluntary"), rate(p.VoluntarySwitches, r.VoluntarySwitches))
	emit(name("proc_ctx_involuntary"), rate(p.InvoluntarySwitches, r.InvoluntarySwitches))
	emit(name("proc_faults_minor"), rate(p.MinorFaults, r.MinorFaults))
	emit(name("proc_faults_major"), rate(p.MajorFaults, r.MajorFaults))
}
