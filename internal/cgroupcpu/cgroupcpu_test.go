package cgroupcpu

import (
	"testing"
	"time"
)

// TestCgroupPath: the cpu controller's line of /proc/PID/cgroup, under v1
// (the line naming cpu, alone or with others) and v2 (the "0::" line).
func TestCgroupPath(t *testing.T) {
	v1 := "4:memory:/m\n2:cpuacct:/acct\n1:cpu,cpuacct:/gait/h0\n0::/\n"
	if got, err := cgroupPath(v1, false); err != nil || got != "/gait/h0" {
		t.Errorf("v1: %q, %v; want /gait/h0", got, err)
	}
	if got, err := cgroupPath("0::/gait/h1\n", true); err != nil || got != "/gait/h1" {
		t.Errorf("v2: %q, %v; want /gait/h1", got, err)
	}
	if _, err := cgroupPath("4:memory:/m\n0::/\n", false); err == nil {
		t.Error("v1 without a cpu line: no error")
	}
}

// TestParseThrottled: v1 counts nanoseconds, v2 microseconds.
func TestParseThrottled(t *testing.T) {
	v1 := "nr_periods 12\nnr_throttled 9\nthrottled_time 810000000\nnr_bursts 0\n"
	if got, err := parseThrottled([]byte(v1), false); err != nil || got != 810*time.Millisecond {
		t.Errorf("v1: %v, %v; want 810ms", got, err)
	}
	v2 := "usage_usec 5\nnr_periods 12\nnr_throttled 9\nthrottled_usec 810000\n"
	if got, err := parseThrottled([]byte(v2), true); err != nil || got != 810*time.Millisecond {
		t.Errorf("v2: %v, %v; want 810ms", got, err)
	}
	if _, err := parseThrottled([]byte(v2), false); err == nil {
		t.Error("v2's file read as v1: no error")
	}
}
