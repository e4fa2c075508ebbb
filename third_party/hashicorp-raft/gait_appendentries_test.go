package raft

import (
	"io"
	"reflect"
	"testing"
	"time"
)

func sampleAppendEntries() *AppendEntriesRequest {
	at := time.Unix(1764300000, 123456789)
	return &AppendEntriesRequest{
		RPCHeader:    RPCHeader{ProtocolVersion: ProtocolVersionMax, ID: []byte("leader"), Addr: []byte("127.0.0.1:7000")},
		Term:         7,
		Leader:       []byte("127.0.0.1:7000"),
		PrevLogEntry: 41, PrevLogTerm: 6, LeaderCommitIndex: 40, GaitSent: 1234567890123,
		Entries: []*Log{
			{Index: 42, Term: 7, Type: LogCommand, Data: []byte("SET k v"), AppendedAt: at},
			{Index: 43, Term: 7, Type: LogNoop, Data: []byte{}, Extensions: []byte("ext")},
			{Index: 44, Term: 7, Type: LogConfiguration, Data: nil, AppendedAt: at.Add(time.Millisecond)},
		},
	}
}

// TestGaitAppendEntriesFrame: a request and an answer come back from
// their binary form field for field, nil and empty byte strings apart,
// the zero AppendedAt zero; a frame cut short or with bytes to spare is an
// error, never a panic.
func TestGaitAppendEntriesFrame(t *testing.T) {
	req := sampleAppendEntries()
	body := encodeAppendEntries(nil, req)
	var got AppendEntriesRequest
	if err := decodeAppendEntries(body, &got); err != nil {
		t.Fatal(err)
	}
	for _, l := range got.Entries {
		l.AppendedAt = l.AppendedAt.UTC()
	}
	for _, l := range req.Entries {
		l.AppendedAt = l.AppendedAt.UTC()
	}
	if !reflect.DeepEqual(&got, req) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, *req)
	}
	if got.Entries[1].Data == nil || got.Entries[2].Data != nil || !got.Entries[1].AppendedAt.IsZero() {
		t.Fatal("nil, empty and the zero time not kept apart")
	}
	var heartbeat AppendEntriesRequest
	if err := decodeAppendEntries(encodeAppendEntries(nil, &AppendEntriesRequest{Term: 3, RPCHeader: RPCHeader{Addr: []byte("a")}}), &heartbeat); err != nil || heartbeat.Entries != nil || heartbeat.Term != 3 {
		t.Fatalf("heartbeat: %+v, %v", heartbeat, err)
	}
	for n := 0; n < len(body); n++ {
		if err := decodeAppendEntries(body[:n], new(AppendEntriesRequest)); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", n, len(body))
		}
	}
	if err := decodeAppendEntries(append(body[:len(body):len(body)], 0), new(AppendEntriesRequest)); err == nil {
		t.Fatal("a frame with a byte to spare decoded")
	}

	resp := &AppendEntriesResponse{RPCHeader: RPCHeader{ID: []byte("f")}, Term: 7, LastLog: 44, Success: true, NoRetryBackoff: true}
	var gotResp AppendEntriesResponse
	errText, err := decodeAppendEntriesResponse(encodeAppendEntriesResponse(nil, "no", resp), &gotResp)
	if err != nil || errText != "no" || !reflect.DeepEqual(&gotResp, resp) {
		t.Fatalf("answer: %+v %q %v", gotResp, errText, err)
	}
}

// TestGaitAppendEntriesOverTCP: over real TCP NetworkTransports, an
// AppendEntries sent alone and through the pipeline reaches the follower
// as sent and its answer (and an error) come back.
func TestGaitAppendEntriesOverTCP(t *testing.T) {
	follower, err := NewTCPTransport("127.0.0.1:0", nil, 2, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	leader, err := NewTCPTransport("127.0.0.1:0", nil, 2, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	want := sampleAppendEntries()
	got := make(chan *AppendEntriesRequest, 4)
	go func() {
		for rpc := range follower.Consumer() {
			req := rpc.Command.(*AppendEntriesRequest)
			got <- req
			if req.Term == 99 {
				rpc.Respond(nil, io.ErrUnexpectedEOF)
				continue
			}
			rpc.Respond(&AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[len(req.Entries)-1].Index, Success: true}, nil)
		}
	}()
	check := func(how string, resp *AppendEntriesResponse) {
		t.Helper()
		req := <-got
		if len(req.Entries) != 3 || string(req.Entries[0].Data) != "SET k v" || !req.Entries[0].AppendedAt.Equal(want.Entries[0].AppendedAt) ||
			string(req.Addr) != "127.0.0.1:7000" || req.LeaderCommitIndex != 40 {
			t.Fatalf("%s: follower got %+v", how, req)
		}
		if !resp.Success || resp.LastLog != 44 || resp.Term != 7 {
			t.Fatalf("%s: answer %+v", how, resp)
		}
	}
	var resp AppendEntriesResponse
	if err := leader.AppendEntries("f", follower.LocalAddr(), want, &resp); err != nil {
		t.Fatal(err)
	}
	check("alone", &resp)

	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := p.AppendEntries(want, new(AppendEntriesResponse))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	check("pipelined", f.Response())

	bad := *want
	bad.Term = 99
	if err := leader.AppendEntries("f", follower.LocalAddr(), &bad, new(AppendEntriesResponse)); err == nil || err.Error() != io.ErrUnexpectedEOF.Error() {
		t.Fatalf("the follower's error came back as %v", err)
	}
	<-got
	// The connection goes on after an error answer.
	if err := leader.AppendEntries("f", follower.LocalAddr(), want, &resp); err != nil {
		t.Fatal(err)
	}
	check("after an error", &resp)
}
