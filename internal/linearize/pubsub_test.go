package linearize

import (
	"strings"
	"testing"
)

// pub is an acknowledged PUBLISH of msg over [call, ret] milliseconds.
func pub(msg string, call, ret int64) Publish {
	return Publish{Msg: msg, Call: call * 1e6, Return: ret * 1e6, Acked: true}
}

// session asked for at start and answered 1 ms later.
func session(sub string, start, end int64, msgs ...string) Session {
	return Session{Subscriber: sub, Asked: start * 1e6, Start: (start + 1) * 1e6, End: end * 1e6, Msgs: msgs}
}

func TestPubSubClean(t *testing.T) {
	pubs := []Publish{pub("a", 10, 11), pub("b", 12, 13), pub("c", 12, 20),
		{Msg: "d", Call: 14e6, Return: Never}} // unknown, never delivered: fine
	late := session("s2", 11, 100, "b", "c") // began after a was called
	late.Msgs = []string{"c", "b"}           // b and c overlap: either order, if everyone agrees
	r := CheckPubSub(pubs, []Session{
		session("s1", 0, 100, "a", "c", "b"),
		late,
		session("s3", 0, 100, "a", "c", "b"),
	})
	if r.Violations() != 0 {
		t.Fatalf("violations in a clean run: %s\n%s", r, strings.Join(r.Examples, "\n"))
	}
	if r.Delivered["s1"] != 3 || r.Delivered["s2"] != 2 || r.Acked != 3 || r.Published != 4 {
		t.Errorf("counts: %s", r)
	}
}

func TestPubSubViolations(t *testing.T) {
	abc := []Publish{pub("a", 10, 11), pub("b", 12, 13), pub("c", 14, 15)}
	// Three messages published at once, any order of them is legal.
	xyz := []Publish{pub("x", 1, 50), pub("y", 1, 50), pub("z", 1, 50)}
	cases := []struct {
		name     string
		pubs     []Publish
		sessions []Session
		count    func(PubSubReport) int
	}{
		{"foreign", abc, []Session{session("s1", 0, 100, "a", "b", "q", "c")}, func(r PubSubReport) int { return r.Foreign }},
		{"duplicate", abc, []Session{session("s1", 0, 100, "a", "b", "c", "c")}, func(r PubSubReport) int { return r.Duplicates }},
		{"lost", abc, []Session{session("s1", 0, 100, "a", "c")}, func(r PubSubReport) int { return r.Lost }},
		{"against real time", abc, []Session{session("s1", 0, 100, "b", "a", "c")}, func(r PubSubReport) int { return r.LateOrder }},
		{"opposite orders", xyz, []Session{
			session("s1", 0, 100, "x", "y", "z"),
			session("s2", 0, 100, "y", "x", "z"),
		}, func(r PubSubReport) int { return r.Reorders + r.Cycles }},
		// Every two sessions agree on the messages they share.
		{"cycle of three", xyz, []Session{
			brokenAt(session("s1", 0, 100, "x", "y")),
			brokenAt(session("s2", 0, 100, "y", "z")),
			brokenAt(session("s3", 0, 100, "z", "x")),
		}, func(r PubSubReport) int { return r.Cycles }},
	}
	for _, c := range cases {
		r := CheckPubSub(c.pubs, c.sessions)
		if c.count(r) == 0 || c.count(r) != r.Violations() || len(r.Examples) == 0 {
			t.Errorf("%s: want that violation alone: %s\n%s", c.name, r, strings.Join(r.Examples, "\n"))
		}
		t.Logf("%s: %s\n%s", c.name, r, strings.Join(r.Examples, "\n"))
	}
}

func brokenAt(s Session) Session {
	s.Broken = true
	return s
}

// A broken session's misses and a delivery of a message acknowledged
// before the session began are counted, not judged.
func TestPubSubNotJudged(t *testing.T) {
	pubs := []Publish{pub("a", 10, 11), pub("b", 12, 13), pub("c", 14, 15)}
	broken := brokenAt(session("s1", 0, 14, "a"))
	r := CheckPubSub(pubs, []Session{broken, session("s2", 12, 100, "a", "b", "c")})
	if r.Violations() != 0 || r.MissedByBroken != 1 || r.BeforeSubscribe != 1 || r.Broken != 1 {
		t.Errorf("%s\n%s", r, strings.Join(r.Examples, "\n"))
	}
}
