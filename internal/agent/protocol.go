// Package agent is what gait runs on each machine of an inventory, as
// root, over one long-lived SSH session: it reads requests on stdin and
// answers on stdout, builds testbeds and injects limpware there, runs
// processes, and removes everything it made once the control connection
// closes or its heartbeats stop.
//
// The protocol is frames of JSON, each behind its length as 4 bytes, big
// endian: requests one way, responses the other, matched by id. The
// control node sends a ping every HeartbeatInterval; an agent that hears
// nothing for its timeout takes everything down and exits.
package agent

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxFrame bounds one frame, so a corrupt length cannot make either end
// allocate without end. MaxRead bounds a file read through the agent and
// LogTail a log's end, so the answer fits in a frame (base64 in JSON).
const (
	MaxFrame = 1 << 20
	MaxRead  = 512 << 10
	LogTail  = 64 << 10
)

// HeartbeatInterval is how often the control node pings an agent;
// DefaultTimeout is how long either end waits for the other before it
// takes the connection for dead.
const (
	HeartbeatInterval = time.Second
	DefaultTimeout    = 5 * time.Second
)

// Request is one call from the control node.
type Request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Run  string          `json:"run,omitempty"`  // a testbed the agent made
	Host string          `json:"host,omitempty"` // one of its hosts
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers the request of the same ID.
type Response struct {
	ID     uint64          `json:"id"`
	Err    string          `json:"err,omitempty"`
	Code   string          `json:"code,omitempty"` // one of the Code* constants when Err matches a known cause
	Result json.RawMessage `json:"result,omitempty"`
	// At is when the agent began serving the request, in Unix
	// nanoseconds on its machine's clock: when a fault it applies began
	// there, which the control node puts on its own clock with the
	// machine's measured offset.
	At int64 `json:"at,omitempty"`
}

// Codes name errors the control node acts on, as a sentinel error does
// within one process.
const (
	CodeNoDisk      = "no_disk"
	CodeNoCPUCgroup = "no_cpu_cgroup"
	CodeUnknownRun  = "unknown_run"
)

// Ops lists every request the agent serves; any other op is refused.
var Ops = map[string]bool{
	"ping": true, "time": true, "info": true, "check": true, "scan": true, "clean": true,
	"up": true, "down": true, "overlay": true, "host": true, "start": true, "exec": true,
	"proc": true, "file": true, "bandwidth": true, "link": true, "disk": true, "cpu": true, "signal": true,
	"cputime": true, "kill": true, "restart": true,
}

// hostOps act on one host of one run; they need Run and Host.
var hostOps = map[string]bool{
	"host": true, "start": true, "proc": true, "file": true, "bandwidth": true, "link": true, "disk": true, "cpu": true,
	"signal": true, "cputime": true, "kill": true, "restart": true,
}

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(data) > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(data), MaxFrame)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

// ErrFrameTooLarge is a frame whose length exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("frame too large")

// ReadFrame reads one frame's body. io.EOF means the stream ended
// cleanly between frames.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, MaxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("frame of %d bytes: %w", n, err)
	}
	return body, nil
}

// DecodeRequest reads and checks a request frame's body.
func DecodeRequest(body []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("request: %w", err)
	}
	switch {
	case r.ID == 0:
		return r, errors.New("request: no id")
	case !Ops[r.Op]:
		return r, fmt.Errorf("request %d: unknown op %.40q", r.ID, r.Op)
	case hostOps[r.Op] && (r.Run == "" || r.Host == ""):
		return r, fmt.Errorf("request %d: %s needs a run and a host", r.ID, r.Op)
	}
	return r, nil
}

// DecodeResponse reads a response frame's body.
func DecodeResponse(body []byte) (Response, error) {
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("response: %w", err)
	}
	if r.ID == 0 {
		return r, errors.New("response: no id")
	}
	return r, nil
}

// Args of the requests that take any, and Results of those that answer
// more than success.
type (
	// UpArgs makes a testbed on the agent's machine.
	UpArgs struct {
		Hosts     int    `json:"hosts"`
		Bandwidth uint64 `json:"bandwidth,omitempty"` // bit/s; 0 for the default
		Disk      bool   `json:"disk,omitempty"`
		// DiskBandwidth (byte/s) and DiskLatency are the limpfs disk's;
		// Emulate makes every data directory an emulating store, as
		// testbed.Options has them.
		DiskBandwidth float64       `json:"disk_bandwidth,omitempty"`
		DiskLatency   time.Duration `json:"disk_latency,omitempty"`
		Emulate       bool          `json:"emulate,omitempty"`
		// Avoid are subnets the testbed must not take: those of the
		// same run's testbeds on other machines and the control node's.
		Avoid []string `json:"avoid,omitempty"`
	}
	// UpResult names the testbed, its subnet, its directory and its hosts.
	UpResult struct {
		Run    string     `json:"run"`
		Subnet string     `json:"subnet"`
		Dir    string     `json:"dir"`
		Hosts  []HostInfo `json:"hosts"`
	}
	// OverlayArgs join a testbed to the same run's testbeds on other
	// machines (testbed.Overlay).
	OverlayArgs struct {
		VNI     uint32   `json:"vni"`
		Peers   []string `json:"peers"`   // the other machines' addresses
		Subnets []string `json:"subnets"` // their testbeds' subnets
	}
	// HostInfo is what the control node keeps of a host.
	HostInfo struct {
		Name      string `json:"name"`
		Addr      string `json:"addr"`
		Baseline  uint64 `json:"baseline"`
		CPUCgroup bool   `json:"cpu_cgroup"`
		DataDir   string `json:"data_dir"`
	}
	// StartArgs starts a process on a host.
	StartArgs struct {
		Name string   `json:"name"`
		Path string   `json:"path"`
		Args []string `json:"args,omitempty"`
		Env  []string `json:"env,omitempty"`
	}
	// ProcArgs act on the process ID of a host (its place in the order
	// of the host's starts): Do is "state", "stop" (SIGTERM, SIGKILL after
	// Grace), "signal", "restart" (in place, once it has exited) or
	// "log" (its state and the end of its standard error).
	ProcArgs struct {
		ID     int           `json:"id"`
		Do     string        `json:"do"`
		Signal int           `json:"signal,omitempty"`
		Grace  time.Duration `json:"grace,omitempty"`
	}
	// ProcState is a process of a host as the agent sees it.
	ProcState struct {
		ID      int    `json:"id"`
		Pid     int    `json:"pid"`
		Running bool   `json:"running"`
		LogPath string `json:"log_path"`
		Log     string `json:"log,omitempty"` // for "log": the last LogTail bytes of LogPath
	}
	// FileArgs act on a file of a host's testbed directory (nothing
	// outside it): Do is "mkdir", "remove" (recursively), "write" (Data,
	// making its directory), "read" (at most MaxRead bytes) or "size"
	// (Size: the bytes of the file system Path is on).
	FileArgs struct {
		Do   string `json:"do"`
		Path string `json:"path"`
		Data []byte `json:"data,omitempty"`
		Size int64  `json:"size,omitempty"`
	}
	// ExecArgs runs the agent's own binary with these arguments (a gait
	// command, such as one experiment of gait bench) until it exits;
	// it is interrupted when the connection goes.
	ExecArgs struct {
		Args []string `json:"args"`
	}
	// ExecResult is how it ended and the end of what it wrote.
	ExecResult struct {
		Exit   int    `json:"exit"`
		Output string `json:"output"` // the last 4 KiB of stdout and stderr
	}
	// Number carries one number: a bandwidth, a factor, a share of CPUs,
	// a signal, nanoseconds.
	Number struct {
		N float64 `json:"n"`
	}
	// Bool carries one flag: a link up or down.
	Bool struct {
		B bool `json:"b"`
	}
	// Info is the agent's machine, for preflight.
	Info struct {
		Arch     string `json:"arch"`
		Kernel   string `json:"kernel"`
		Pid      int    `json:"pid"`
		UnixNano int64  `json:"unix_nano"`
	}
	// CheckArgs asks preflight's questions of a machine.
	CheckArgs struct {
		Binaries []string `json:"binaries,omitempty"` // programs that must be in PATH
		MinFree  uint64   `json:"min_free,omitempty"` // bytes free under the root
	}
	// Check is one preflight answer; Problem is empty when it passed.
	Check struct {
		Name    string `json:"name"`
		Problem string `json:"problem,omitempty"`
		Detail  string `json:"detail,omitempty"`
	}
	// ScanResult lists what gait left on the machine, one line a thing.
	ScanResult struct {
		Leftovers []string `json:"leftovers"`
	}
)
