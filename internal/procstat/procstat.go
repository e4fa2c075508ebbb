// Package procstat samples a process's resource use from /proc: CPU time,
// resident memory, threads, context switches and page faults. The Magical 1%
// paper correlates these with latency outliers (its Figures 14-15); gait
// records them once a second beside the latencies of a run.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. The kernel reports
// them in USER_HZ, which is 100 on every architecture Go targets on Linux.
const userHZ = 100

// Stat is what gait uses of /proc/PID/stat, which covers the whole process.
type Stat struct {
	MinorFaults, MajorFaults uint64
	UserTicks, SystemTicks   uint64 // CPU time in 1/userHZ s
	Threads                  int64
}

// ParseStat reads the contents of /proc/PID/stat.
func ParseStat(b []byte) (Stat, error) {
	// The command name in parentheses may hold spaces and parentheses of its
	// own; the fields that matter follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("stat: no ')' after the command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is the state (field 3 of proc(5)); field n is f[n-3].
	const last = 20 - 3 // num_threads
	if len(f) <= last {
		return Stat{}, fmt.Errorf("stat: %d fields after the command name, want at least %d", len(f), last+1)
	}
	var s Stat
	var err error
	for _, v := range []struct {
		field int
		dst   *uint64
	}{{10, &s.MinorFaults}, {12, &s.MajorFaults}, {14, &s.UserTicks}, {15, &s.SystemTicks}} {
		if *v.dst, err = strconv.ParseUint(string(f[v.field-3]), 10, 64); err != nil {
			return Stat{}, fmt.Errorf("stat: field %d: %w", v.field, err)
		}
	}
	if s.Threads, err = strconv.ParseInt(string(f[last]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("stat: field 20: %w", err)
	}
	return s, nil
}

// Status is what gait uses of /proc/PID/status (or of a thread's
// /proc/PID/task/TID/status). Its context switch counts are those of the one
// thread it describes.
type Status struct {
	RSS                 int64 // bytes (VmRSS; absent for a zombie)
	Threads             int64
	VoluntarySwitches   uint64
	InvoluntarySwitches uint64
}

// ParseStatus reads the contents of a status file.
func ParseStatus(b []byte) (Status, error) {
	var s Status
	var sawSwitches bool
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		fields := bytes.Fields(val)
		if len(fields) == 0 {
			continue
		}
		var err error
		switch string(key) {
		case "VmRSS":
			s.RSS, err = strconv.ParseInt(string(fields[0]), 10, 64)
			if len(fields) < 2 || string(fields[1]) != "kB" {
				return Status{}, fmt.Errorf("status: VmRSS %q: want a size in kB", bytes.TrimSpace(val))
			}
			s.RSS *= 1024
		case "Threads":
			s.Threads, err = strconv.ParseInt(string(fields[0]), 10, 64)
		case "voluntary_ctxt_switches":
			s.VoluntarySwitches, err = strconv.ParseUint(string(fields[0]), 10, 64)
			sawSwitches = true
		case "nonvoluntary_ctxt_switches":
			s.InvoluntarySwitches, err = strconv.ParseUint(string(fields[0]), 10, 64)
		}
		if err != nil {
			return Status{}, fmt.Errorf("status: %s: %w", key, err)
		}
	}
	if !sawSwitches {
		return Status{}, fmt.Errorf("status: no voluntary_ctxt_switches line")
	}
	return s, nil
}

// Reading is one process's counters at one moment.
type Reading struct {
	Time                                   time.Time
	CPU                                    time.Duration // user + system, all threads
	RSS                                    int64         // bytes
	Threads                                int64
	VoluntarySwitches, InvoluntarySwitches uint64 // summed over the live threads
	MinorFaults, MajorFaults               uint64
}

// Read reads process pid's counters from /proc.
func Read(pid int) (Reading, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	r := Reading{Time: time.Now()}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Reading{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return Reading{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	r.CPU = time.Duration(st.UserTicks+st.SystemTicks) * (time.Second / userHZ)
	r.Threads, r.MinorFaults, r.MajorFaults = st.Threads, st.MinorFaults, st.MajorFaults

	b, err = os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Reading{}, err
	}
	status, err := ParseStatus(b)
	if err != nil {
		return Reading{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	r.RSS = status.RSS
	// A process's status counts only its main thread's switches; sum the threads.
	tasks, _ := filepath.Glob(filepath.Join(dir, "task", "*", "status"))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited meanwhile
		}
		ts, err := ParseStatus(b)
		if err != nil {
			return Reading{}, fmt.Errorf("%s: %w", t, err)
		}
		r.VoluntarySwitches += ts.VoluntarySwitches
		r.InvoluntarySwitches += ts.InvoluntarySwitches
	}
	return r, nil
}
