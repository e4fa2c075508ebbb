package javapipe

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// echo stands in for a client JVM (a pure test of the framing, not of any
// client): it greets, then for each request says where the op went and
// answers it with its data, its channel and op as the ok line's rest; an
// op "fail" is answered with an error, an op "hang" never.
const echo = `echo hello
while read ch seq op arg n; do
  data=$(head -c "$n")
  echo "$seq at $arg"
  case $op in
  fail) echo "$seq err no such $arg" ;;
  hang) ;;
  slow) sleep 2; printf '%s ok 0 %s\n' "$seq" "$ch/$op" ;;
  *) printf '%s ok %s %s\n%s' "$seq" "$n" "$ch/$op" "$data" ;;
  esac
done`

func start(t *testing.T) *Client {
	t.Helper()
	return startChecked(t, nil)
}

// startChecked is start with check as Options.Check.
func startChecked(t *testing.T, check func(kind, rest string) error) *Client {
	t.Helper()
	c, err := Start(Options{Name: "echo client", Java: "/bin/sh", Args: []string{"-c", echo},
		Log: filepath.Join(t.TempDir(), "client.log"), Greeting: true, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// TestAsk: a greeting, then answers matched to their requests, with the
// progress lines an op said, an error, and an op cut by its context that
// still knows where it went.
func TestAsk(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	if g, err := c.Greeting(ctx); err != nil || g != "hello" {
		t.Fatalf("greeting %q, %v", g, err)
	}
	ch := c.Channel()
	a, err := c.Ask(ctx, ch, "put", "k1", []byte("value"))
	if err != nil || string(a.Data) != "value" || a.Rest != "1/put" || !slices.Equal(a.Seen, []string{"at k1"}) {
		t.Errorf("put: %+v, %v", a, err)
	}
	a, err = c.Ask(ctx, ch, "fail", "k2", nil)
	if err == nil || err.Error() != "no such k2" || !slices.Equal(a.Seen, []string{"at k2"}) {
		t.Errorf("fail: %+v, %v", a, err)
	}
	cut, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	a, err = c.Ask(cut, ch, "hang", "k3", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !slices.Equal(a.Seen, []string{"at k3"}) {
		t.Errorf("hang: %+v, %v", a, err)
	}
}

// TestExited: once the JVM has gone, a request fails at once, naming the
// client.
func TestExited(t *testing.T) {
	c := start(t)
	c.Stop()
	if !c.Exited() {
		t.Fatal("not exited after Stop")
	}
	if _, err := c.Ask(context.Background(), 1, "put", "k", nil); err == nil || !strings.Contains(err.Error(), "echo client exited") {
		t.Errorf("ask after exit: %v", err)
	}
}

// TestCheck: a progress line or an ok answer that Check refuses ends the
// client, and the request fails saying which line it was.
func TestCheck(t *testing.T) {
	check := func(kind, rest string) error {
		if strings.Contains(rest, "bad") {
			return errors.New("refused")
		}
		return nil
	}
	for _, c := range []struct{ op, arg, line string }{
		{"put", "bad", `"2 at bad"`},   // a progress line
		{"bad", "k", `"2 ok 0 1/bad"`}, // an ok line's rest
	} {
		cl := startChecked(t, check)
		if _, err := cl.Greeting(context.Background()); err != nil {
			t.Fatal(err)
		}
		ch := cl.Channel()
		if _, err := cl.Ask(context.Background(), ch, "put", "k", nil); err != nil {
			t.Fatalf("a line Check takes: %v", err)
		}
		_, err := cl.Ask(context.Background(), ch, c.op, c.arg, nil)
		if err == nil || !strings.Contains(err.Error(), "bad answer "+c.line+": refused") || !cl.Exited() {
			t.Errorf("%s %s: %v, exited %v", c.op, c.arg, err, cl.Exited())
		}
	}
}

// TestParseLine: answer headers, and the ones refused.
func TestParseLine(t *testing.T) {
	seq, kind, rest, err := ParseLine("7 ok 3 198.18.0.2,198.18.0.3")
	if err != nil || seq != 7 || kind != "ok" || rest != "3 198.18.0.2,198.18.0.3" {
		t.Errorf("ParseLine = %d %q %q %v", seq, kind, rest, err)
	}
	for _, bad := range []string{"x ok 1", "1", "1 ok", "1  x"} {
		if _, _, _, err := ParseLine(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCloseChannel: a close queued behind an op still running returns
// within its wait, with no error; a close with nothing ahead of it is
// answered.
func TestCloseChannel(t *testing.T) {
	c := start(t)
	if _, err := c.Greeting(context.Background()); err != nil {
		t.Fatal(err)
	}
	idle := c.Channel()
	if err := c.CloseChannel(idle, 5*time.Second); err != nil {
		t.Errorf("close of an idle channel: %v", err)
	}
	busy := c.Channel()
	go c.Ask(context.Background(), busy, "slow", "k", nil)
	time.Sleep(100 * time.Millisecond) // the slow op first
	begin := time.Now()
	if err := c.CloseChannel(busy, 200*time.Millisecond); err != nil {
		t.Errorf("close behind a slow op: %v", err)
	}
	if took := time.Since(begin); took > time.Second {
		t.Errorf("close behind a slow op took %v, want about its 200ms wait", took)
	}
}
