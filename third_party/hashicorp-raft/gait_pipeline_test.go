package raft

import (
	"io"
	"testing"
	"time"
)

// TestGaitPipelineStopsWithoutDeadlock (gait): a follower answers an append
// with Success=false, so the leader's pipeline decoder stops; the sends
// pipelineReplicate may still start before it sees the decoder stopped
// must return, over a real TCP NetworkTransport with its default two RPCs
// in flight. Without the decoder taking responses until stopCh closes, the
// second of them waited forever.
func TestGaitPipelineStopsWithoutDeadlock(t *testing.T) {
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
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			select {
			case rpc := <-follower.Consumer():
				rpc.Respond(&AppendEntriesResponse{Term: 1, Success: false}, nil)
			case <-quit:
				return
			}
		}
	}()

	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := &followerReplication{peer: Server{ID: "f", Address: follower.LocalAddr()}}
	stopCh, finishCh := make(chan struct{}), make(chan struct{})
	go (&Raft{}).pipelineDecode(s, p, stopCh, finishCh)
	defer close(stopCh)
	if _, err := p.AppendEntries(&AppendEntriesRequest{Term: 1}, new(AppendEntriesResponse)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finishCh:
	case <-time.After(10 * time.Second):
		t.Fatal("the decoder did not stop after a failed append")
	}

	sent := make(chan error, 1)
	go func() {
		for i := 0; i < 2; i++ {
			if _, err := p.AppendEntries(&AppendEntriesRequest{Term: 1}, new(AppendEntriesResponse)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("append after the decoder stopped: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appends after the decoder stopped still wait: the pipeline is deadlocked")
	}
}
