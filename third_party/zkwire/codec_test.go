package zkwire

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

// A connect request and a getData as zkCli.sh sent them (captured from the
// Java client 3.x: length prefixes removed): what a server must read.
func TestDecodeJavaClientBytes(t *testing.T) {
	connect, _ := hex.DecodeString("00000000" + "0000000000000000" + "00007530" + "0000000000000000" + "00000010" + "00000000000000000000000000000000" + "00")
	var c ConnectRequest
	n, err := Decode(connect, &c)
	if err != nil || n != len(connect)-1 || c.TimeOut != 30000 || len(c.Passwd) != 16 {
		t.Fatalf("connect: n=%d err=%v %+v", n, err, c)
	}
	get, _ := hex.DecodeString("00000001" + "00000004" + "00000004" + "2f666f6f" + "00")
	var h RequestHeader
	n, err = Decode(get, &h)
	if err != nil || h.Xid != 1 || h.Opcode != OpGetData {
		t.Fatalf("header: %+v %v", h, err)
	}
	var r PathWatchRequest
	if _, err := Decode(get[n:], &r); err != nil || r.Path != "/foo" || r.Watch {
		t.Fatalf("getData: %+v %v", r, err)
	}
}

func TestMultiRoundTrip(t *testing.T) {
	req := &MultiRequest{Ops: []MultiOp{
		{MultiHeader{Type: OpCreate}, &CreateRequest{Path: "/a", Data: []byte("x"), ACL: []ACL{{PermAll, "world", "anyone"}}, Flags: FlagSequence}},
		{MultiHeader{Type: OpCheck}, &PathVersionRequest{Path: "/b", Version: 3}},
		{MultiHeader{Type: OpSetData}, &SetDataRequest{Path: "/b", Data: nil, Version: -1}},
		{MultiHeader{Type: OpDelete}, &PathVersionRequest{Path: "/c", Version: -1}},
	}}
	b, err := Append(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	var back MultiRequest
	if n, err := Decode(b, &back); err != nil || n != len(b) {
		t.Fatalf("decode: n=%d of %d, %v", n, len(b), err)
	}
	for i := range req.Ops {
		req.Ops[i].Header.Done = false
	}
	if !reflect.DeepEqual(req.Ops, back.Ops) {
		t.Fatalf("got %+v, want %+v", back.Ops, req.Ops)
	}

	resp := &MultiResponse{Results: []MultiResult{
		{Type: OpCreate, Path: "/a0000000001"},
		{Type: OpCreate2, Path: "/d", Stat: &Stat{Czxid: 7, Version: 0}},
		{Type: OpCheck},
		{Type: OpSetData, Stat: &Stat{Mzxid: 9, Version: 4}},
		{Type: OpDelete},
		{Type: OpError, Err: ErrBadVersion},
	}}
	rb, err := Append(nil, resp)
	if err != nil {
		t.Fatal(err)
	}
	var rback MultiResponse
	if n, err := Decode(rb, &rback); err != nil || n != len(rb) {
		t.Fatalf("decode reply: n=%d of %d, %v", n, len(rb), err)
	}
	if !reflect.DeepEqual(resp.Results, rback.Results) {
		t.Fatalf("got %+v, want %+v", rback.Results, resp.Results)
	}
	again, _ := Append(nil, &rback)
	if !bytes.Equal(again, rb) {
		t.Fatal("re-encoding a decoded reply changed its bytes")
	}
}

func TestDecodeShortAndHostile(t *testing.T) {
	var c CreateRequest
	if _, err := Decode([]byte{0, 0, 0, 9, '/'}, &c); err != ErrShortBuffer {
		t.Fatalf("short path: %v", err)
	}
	var w PathWatchRequest
	if _, err := Decode([]byte{0, 0, 0, 1, '/'}, &w); err != ErrShortBuffer {
		t.Fatalf("missing watch flag: %v", err)
	}
	// data claiming two gigabytes in a 13-byte packet
	if _, err := Decode([]byte{0, 0, 0, 1, '/', 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, &c); err != ErrShortBuffer {
		t.Fatalf("huge data: %v", err)
	}
	// an ACL vector claiming two billion entries in a 12-byte packet
	b := []byte{0, 0, 0, 1, '/', 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}
	if _, err := Decode(b, &c); err != ErrBadLength {
		t.Fatalf("huge vector: %v", err)
	}
}

// Any bytes, as a client may send them, decode into any request record
// without a panic and without taking more than the packet.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(int32(OpCreate), []byte{0, 0, 0, 2, '/', 'a', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(int32(OpMulti), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add(int32(OpSetWatches), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, op int32, b []byte) {
		rec := RequestForOp(op)
		if rec == nil {
			return
		}
		if n, err := Decode(b, rec); err == nil && n > len(b) {
			t.Fatalf("opcode %d: took %d of %d bytes", op, n, len(b))
		}
	})
}
