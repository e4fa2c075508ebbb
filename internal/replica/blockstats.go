package replica

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gait-dev/gait/internal/resp"
)

// Redis counts a blocking command once in INFO commandstats, when it is
// served or times out. Gait's redis-servers run it once per attempt and
// per try while it heads a queue, each inside MULTI … EXEC, so each
// replica counts those extra calls as it sends them, and the agent takes
// them out of its server's commandstats. CONFIG RESETSTAT zeroes both
// (the agent's server alone, or every server inside a transaction).
type blockStats struct {
	mu    sync.Mutex
	extra map[string]int64 // command name, lower case: calls redis would not have counted
	// counted are the blocked clients whose command ran once since the
	// counts began: the call redis counts.
	counted map[string]bool
}

// ran notes one run of blocked client id's command: its MULTI and EXEC
// are extra, and the command too unless it is the client's first run.
func (s *blockStats) ran(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extra == nil {
		s.extra, s.counted = map[string]int64{}, map[string]bool{}
	}
	s.extra["multi"]++
	s.extra["exec"]++
	if s.counted[id] {
		s.extra[strings.ToLower(name)]++
	}
	s.counted[id] = true
}

// forget drops a client that no longer waits.
func (s *blockStats) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.counted, id)
}

// reset zeroes the counts, as CONFIG RESETSTAT zeroes the server's: a
// client still waiting is counted again at its next run.
func (s *blockStats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra, s.counted = nil, nil
}

// applied notes an entry that is not an attempt: a CONFIG RESETSTAT every
// replica runs (inside a transaction) resets the counts. Nothing to look
// for before a blocked client ever ran.
func (s *blockStats) applied(payload []byte) {
	s.mu.Lock()
	counting := len(s.extra) > 0
	s.mu.Unlock()
	if counting && containsFold(payload, "RESETSTAT") {
		s.reset()
	}
}

// containsFold says whether b contains the upper-case word w in any case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if b[i]|0x20 == w[0]|0x20 && bytes.EqualFold(b[i:i+len(w)], []byte(w)) {
			return true
		}
	}
	return false
}

// patch takes the extra calls out of an INFO reply's commandstats lines
// (calls and usec_per_call; a command left with no call is not listed,
// as in redis). Any other reply is returned as it is.
func (s *blockStats) patch(raw []byte) []byte {
	s.mu.Lock()
	extra := make(map[string]int64, len(s.extra))
	for k, v := range s.extra {
		extra[k] = v
	}
	s.mu.Unlock()
	if len(extra) == 0 || !bytes.Contains(raw, []byte("cmdstat_")) {
		return raw
	}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (v.Kind != '$' && v.Kind != '=') || v.Null {
		return raw
	}
	lines := strings.SplitAfter(string(v.Str), "\n")
	out := lines[:0]
	for _, l := range lines {
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(l, "cmdstat_") || extra[name] == 0 {
			out = append(out, l)
			continue
		}
		var calls, usec int64
		var perCall float64
		if _, err := fmt.Sscanf(rest, "calls=%d,usec=%d,usec_per_call=%f,", &calls, &usec, &perCall); err != nil {
			out = append(out, l)
			continue
		}
		calls -= extra[name]
		if calls <= 0 {
			continue
		}
		tail := rest[strings.Index(rest, ",rejected_calls="):]
		out = append(out, "cmdstat_"+name+":calls="+strconv.FormatInt(calls, 10)+",usec="+strconv.FormatInt(usec, 10)+
			",usec_per_call="+strconv.FormatFloat(float64(usec)/float64(calls), 'f', 2, 64)+tail)
	}
	v.Str = []byte(strings.Join(out, ""))
	return appendValue(nil, v)
}
