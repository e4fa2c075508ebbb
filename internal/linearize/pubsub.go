package linearize

import (
	"fmt"
	"slices"
	"strings"
)

// A channel's history is not one object's: every subscriber has its own view
// of it, so porcupine's model does not fit, and pub/sub has this checker of
// its own (Jepsen style: the workload records Publishes and Sessions, the
// checker judges them). It checks what a deployment that orders PUBLISH
// through its log promises, which one redis-server promises too:
//
//   - no subscriber gets a message nobody published, nor one message twice;
//   - all subscribers see the messages in one total order (no two see two
//     messages in opposite orders);
//   - that order respects real time: a message whose PUBLISH returned before
//     another's was called comes first;
//   - a subscription whose SUBSCRIBE was answered gets every acknowledged
//     message published after that, unless the subscription broke (its
//     connection failed: a subscriber on a crashed agent loses it, as on a
//     crashed redis-server). A broken session's misses are counted, not
//     judged: the message may have been committed and not yet applied by the
//     subscriber's replica when the connection failed.
//
// A PUBLISH acknowledged before a SUBSCRIBE was sent does not reach that
// subscription on redis; on a replicated deployment it may, when the
// subscriber's replica lags behind the one that answered the publisher
// (gait's agent catches up before it subscribes, as far as its read mode
// asks: under linearizable reads it does not happen). Such deliveries are
// counted; the caller judges them where they are promised.

// Publish is one PUBLISH of a message no other PUBLISH sends. Acked is false
// when the client did not learn the outcome; Return is then Never.
type Publish struct {
	Msg          string
	Call, Return int64
	Acked        bool
}

// Session is one subscription: asked for at Asked, from Start, when the
// subscriber read its SUBSCRIBE's answer, to End, when its connection
// failed (Broken) or the subscriber stopped after the last message; Msgs
// are what it got, in order.
type Session struct {
	Subscriber        string
	Asked, Start, End int64
	Broken            bool
	Msgs              []string
}

// PubSubReport counts what CheckPubSub found; Lost, Foreign, Duplicates,
// Reorders, Cycles and LateOrder are violations.
type PubSubReport struct {
	Published, Acked int
	Sessions, Broken int
	Delivered        map[string]int // messages per subscriber, over its sessions

	Foreign    int // delivered, never published
	Duplicates int // delivered twice to one session
	Reorders   int // a message out of place in one session against another's order
	Cycles     int // messages with no place in any one order of all sessions' views
	LateOrder  int // delivered after a message whose PUBLISH was called after its own returned
	Lost       int // acknowledged after an unbroken session began and never delivered to it

	MissedByBroken  int // acknowledged after a broken session began, before it broke, not delivered
	BeforeSubscribe int // delivered though acknowledged before its SUBSCRIBE was sent

	Examples []string // the first few violations, described
}

// Violations sums the counts that break the promise.
func (r PubSubReport) Violations() int {
	return r.Foreign + r.Duplicates + r.Reorders + r.Cycles + r.LateOrder + r.Lost
}

func (r PubSubReport) String() string {
	subs := make([]string, 0, len(r.Delivered))
	for s, n := range r.Delivered {
		subs = append(subs, fmt.Sprintf("%s %d", s, n))
	}
	slices.Sort(subs)
	return fmt.Sprintf("%d published (%d acknowledged), %d sessions (%d broken), delivered: %s; "+
		"violations %d (lost %d, foreign %d, duplicates %d, reorders %d, in cycles %d, against real time %d); "+
		"missed by broken sessions %d, acknowledged before their SUBSCRIBE %d",
		r.Published, r.Acked, r.Sessions, r.Broken, strings.Join(subs, ", "),
		r.Violations(), r.Lost, r.Foreign, r.Duplicates, r.Reorders, r.Cycles, r.LateOrder,
		r.MissedByBroken, r.BeforeSubscribe)
}

func (r *PubSubReport) example(format string, args ...any) {
	if len(r.Examples) < 5 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// CheckPubSub judges sessions against the publishes.
func CheckPubSub(pubs []Publish, sessions []Session) PubSubReport {
	r := PubSubReport{Published: len(pubs), Sessions: len(sessions), Delivered: map[string]int{}}
	byMsg := make(map[string]Publish, len(pubs))
	for _, p := range pubs {
		byMsg[p.Msg] = p
		if p.Acked {
			r.Acked++
		}
	}
	for si, s := range sessions {
		if s.Broken {
			r.Broken++
		}
		r.Delivered[s.Subscriber] += len(s.Msgs)
		got := make(map[string]bool, len(s.Msgs))
		latestCall, latestMsg := int64(-1), ""
		for _, m := range s.Msgs {
			p, ok := byMsg[m]
			switch {
			case !ok:
				r.Foreign++
				r.example("session %d of %s got %q, which nobody published", si, s.Subscriber, m)
			case got[m]:
				r.Duplicates++
				r.example("session %d of %s got %q twice", si, s.Subscriber, m)
			}
			got[m] = true
			if !ok {
				continue
			}
			if p.Acked && p.Return < s.Asked {
				r.BeforeSubscribe++
				r.example("session %d of %s, asked for at %.3fms, got %q, acknowledged at %.3fms",
					si, s.Subscriber, float64(s.Asked)/1e6, m, float64(p.Return)/1e6)
			}
			if p.Acked && latestCall > p.Return {
				r.LateOrder++
				r.example("session %d of %s got %q after %q, whose PUBLISH was called %.3fms after %q's returned",
					si, s.Subscriber, m, latestMsg, float64(latestCall-p.Return)/1e6, m)
			}
			if p.Call > latestCall {
				latestCall, latestMsg = p.Call, m
			}
		}
		for _, p := range pubs {
			if !p.Acked || p.Call < s.Start || got[p.Msg] {
				continue
			}
			switch {
			case !s.Broken:
				r.Lost++
				r.example("session %d of %s, begun at %.3fms and never broken, missed %q published [%.3fms, %.3fms]",
					si, s.Subscriber, float64(s.Start)/1e6, p.Msg, float64(p.Call)/1e6, float64(p.Return)/1e6)
			case p.Return < s.End:
				r.MissedByBroken++
			}
		}
	}
	r.Reorders = reorders(sessions, &r)
	if r.Cycles = inCycles(sessions); r.Cycles > 0 {
		r.example("%d messages have no place in one order that agrees with every session's", r.Cycles)
	}
	return r
}

// reorders counts, for every two sessions, the messages of the second that
// come before a message they both got that the first got earlier.
func reorders(sessions []Session, r *PubSubReport) int {
	n := 0
	for a := range sessions {
		pos := make(map[string]int, len(sessions[a].Msgs))
		for i, m := range sessions[a].Msgs {
			pos[m] = i
		}
		for b := a + 1; b < len(sessions); b++ {
			last, lastMsg := -1, ""
			for _, m := range sessions[b].Msgs {
				i, ok := pos[m]
				if !ok {
					continue
				}
				if i < last {
					n++
					r.example("sessions %d and %d see %q and %q in opposite orders", a, b, lastMsg, m)
				}
				if i > last {
					last, lastMsg = i, m
				}
			}
		}
	}
	return n
}

// inCycles counts the messages that cannot be put in one order agreeing with
// every session's (Kahn's sort of the graph of messages each session got
// one after another): sessions that agree pairwise may still disagree
// around a cycle through three or more.
func inCycles(sessions []Session) int {
	next := map[string][]string{}
	into := map[string]int{}
	for _, s := range sessions {
		for i, m := range s.Msgs {
			if _, ok := into[m]; !ok {
				into[m] = 0
			}
			if i > 0 && s.Msgs[i-1] != m {
				next[s.Msgs[i-1]] = append(next[s.Msgs[i-1]], m)
				into[m]++
			}
		}
	}
	var ready []string
	for m, n := range into {
		if n == 0 {
			ready = append(ready, m)
		}
	}
	placed := 0
	for len(ready) > 0 {
		m := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		placed++
		for _, x := range next[m] {
			if into[x]--; into[x] == 0 {
				ready = append(ready, x)
			}
		}
	}
	return len(into) - placed
}
