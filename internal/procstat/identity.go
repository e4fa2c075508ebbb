package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Identity tells a running process apart from a later one that got its pid.
type Identity struct {
	PID   int
	Start uint64 // start time in clock ticks after boot (field 22 of /proc/PID/stat)
}

// Identify returns pid's identity; Start is 0 when it does not run.
func Identify(pid int) Identity {
	f := statFields(pid)
	id := Identity{PID: pid}
	if len(f) >= 20 {
		id.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return id
}

// Alive reports whether the process still runs: the same pid with the same
// start time, and not a zombie.
func (id Identity) Alive() bool {
	if id.PID <= 0 || id.Start == 0 {
		return false
	}
	f := statFields(id.PID)
	if len(f) < 20 || f[0] == "Z" {
		return false
	}
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return start == id.Start
}

// Running reports whether pid is a process that is neither gone nor a
// zombie (a zombie no longer holds its namespace or open files).
func Running(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z"
}

// statFields are /proc/PID/stat's fields after the command name (which may
// hold spaces and parentheses), the process state first; nil when pid does
// not run.
func statFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}
