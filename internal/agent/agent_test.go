package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/testbed"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	req := Request{ID: 7, Op: "bandwidth", Run: "abcde", Host: "h0", Args: json.RawMessage(`{"n":100000}`)}
	if err := WriteFrame(&buf, req); err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(body)
	if err != nil || got.ID != 7 || got.Op != "bandwidth" || got.Host != "h0" || string(got.Args) != `{"n":100000}` {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := ReadFrame(&buf); !errors.Is(err, io.EOF) {
		t.Errorf("at the end: %v, want EOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0, 0, 0})); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("huge length: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{'})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut frame: %v", err)
	}
	for body, want := range map[string]string{
		`{"op":"ping"}`:                  "no id",
		`{"id":1,"op":"rm -rf"}`:         "unknown op",
		`{"id":2,"op":"kill","run":"x"}`: "needs a run and a host",
		`[`:                              "request:",
	} {
		if _, err := DecodeRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// FuzzFrames: any byte stream read as frames of requests gives requests
// that pass the checks, or errors; never a panic or an endless read.
func FuzzFrames(f *testing.F) {
	var seed bytes.Buffer
	WriteFrame(&seed, Request{ID: 1, Op: "ping"})
	WriteFrame(&seed, Request{ID: 2, Op: "up", Args: json.RawMessage(`{"hosts":3,"disk":true}`)})
	WriteFrame(&seed, Request{ID: 3, Op: "link", Run: "a1b2c", Host: "h1", Args: json.RawMessage(`{"b":false}`)})
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for range 64 {
			body, err := ReadFrame(r)
			if err != nil {
				return
			}
			req, err := DecodeRequest(body)
			if err != nil {
				continue
			}
			if req.ID == 0 || !Ops[req.Op] || (hostOps[req.Op] && (req.Run == "" || req.Host == "")) {
				t.Fatalf("accepted %+v", req)
			}
			var again bytes.Buffer
			if err := WriteFrame(&again, req); err != nil {
				t.Fatal(err)
			}
			body2, err := ReadFrame(&again)
			if err != nil {
				t.Fatal(err)
			}
			if req2, err := DecodeRequest(body2); err != nil || req2.ID != req.ID || req2.Op != req.Op {
				t.Fatalf("round trip: %+v -> %+v, %v", req, req2, err)
			}
		}
	})
}

// client drives a Serve in the same process over pipes.
type client struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *io.PipeReader
	next uint64
}

func (c *client) call(op, run, host string, args, result any) error {
	c.t.Helper()
	c.next++
	req := Request{ID: c.next, Op: op, Run: run, Host: host}
	if args != nil {
		req.Args, _ = json.Marshal(args)
	}
	if err := WriteFrame(c.in, req); err != nil {
		c.t.Fatal(err)
	}
	body, err := ReadFrame(c.out)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := DecodeResponse(body)
	if err != nil || resp.ID != req.ID {
		c.t.Fatalf("response %+v to %d: %v", resp, req.ID, err)
	}
	if resp.Err != "" {
		return errors.New(resp.Err)
	}
	if result != nil {
		return json.Unmarshal(resp.Result, result)
	}
	return nil
}

// serve starts an agent under a new root, with a testbed of two hosts
// and a process on h0, and returns the client and Serve's result.
func serve(t *testing.T, timeout time.Duration) (c *client, root, run string, done <-chan error) {
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	root = t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), inR, outW, Options{Root: root, Timeout: timeout, Log: testLog{t}})
		outW.Close()
	}()
	c = &client{t: t, in: inW, out: outR}
	var up UpResult
	if err := c.call("up", "", "", UpArgs{Hosts: 2}, &up); err != nil {
		t.Fatal(err)
	}
	if err := c.call("start", up.Run, "h0", StartArgs{Name: "sleeper", Path: "sleep", Args: []string{"300"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.call("bandwidth", up.Run, "h1", Number{N: 100_000}, nil); err != nil {
		t.Fatal(err)
	}
	var info HostInfo
	if err := c.call("host", up.Run, "h1", nil, &info); err != nil || info.Baseline != testbed.DefaultBandwidth {
		t.Fatalf("host h1: %+v, %v", info, err)
	}
	if err := c.call("disk", up.Run, "h1", Number{N: 10}, nil); err == nil || !strings.Contains(err.Error(), "not on limpfs") {
		t.Errorf("disk on a host without limpfs: %v", err)
	}
	if left := Leftovers(root, "", os.Getpid(), []string{up.Run}); len(left) == 0 {
		t.Fatal("the leftover scan sees nothing of a live testbed")
	}
	return c, root, up.Run, served
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestCloseRemovesAll: when the control connection closes, the agent
// takes its testbed and processes down before it returns.
func TestCloseRemovesAll(t *testing.T) {
	c, root, run, done := serve(t, 10*time.Second)
	c.in.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop after its input closed")
	}
	if left := Leftovers(root, "", os.Getpid(), []string{run}); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestHeartbeatTimeout: an agent that hears nothing for its timeout (a
// control node frozen, or its connection hung by a partition) removes
// everything within a few seconds.
func TestHeartbeatTimeout(t *testing.T) {
	c, root, run, done := serve(t, time.Second)
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not time out")
	}
	t.Logf("down %.1fs after the last request", time.Since(start).Seconds())
	if left := Leftovers(root, "", os.Getpid(), []string{run}); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	c.in.Close()
}

func TestChecks(t *testing.T) {
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	for _, c := range Checks(t.TempDir(), CheckArgs{Binaries: []string{"sh", "no-such-program-gait"}}) {
		t.Logf("%s: %q %s", c.Name, c.Problem, c.Detail)
		if bad := c.Problem != ""; bad != (c.Name == "binary no-such-program-gait") {
			t.Errorf("%s: problem %q", c.Name, c.Problem)
		}
	}
}
