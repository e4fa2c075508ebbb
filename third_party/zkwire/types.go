package zkwire

import "reflect"

// RequestHeader opens every request after the connect request.
type RequestHeader struct {
	Xid    int32
	Opcode int32
}

// ReplyHeader opens every reply after the connect response.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

// MultiHeader opens each operation of a multi, and each of its results.
type MultiHeader struct {
	Type int32
	Done bool
	Err  ErrCode
}

// ACL is one access control entry.
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// Stat is a node's metadata.
type Stat struct {
	Czxid          int64 // the zxid of the change that created the node
	Mzxid          int64 // the zxid of the change that last modified its data
	Ctime          int64 // ms since the epoch when it was created
	Mtime          int64 // ms since the epoch when its data last changed
	Version        int32 // changes to its data
	Cversion       int32 // changes to its children
	Aversion       int32 // changes to its ACL
	EphemeralOwner int64 // the owning session of an ephemeral node, else 0
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // the zxid of the change that last changed its children
}

// ConnectRequest opens a connection. Clients of 3.4 and later append a
// readOnly byte, which a server reads if it is there.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
}

// ConnectResponse answers it; servers always write ReadOnly.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

// PathRequest: getACL, sync, getEphemerals, getAllChildrenNumber.
type PathRequest struct {
	Path string
}

// PathVersionRequest: delete, check.
type PathVersionRequest struct {
	Path    string
	Version int32
}

// PathWatchRequest: exists, getData, getChildren, getChildren2.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// CreateRequest: create, create2, createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// CreateTTLRequest: createTTL.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64 // ms
}

// SetDataRequest: setData.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// SetACLRequest: setACL.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// SetWatchesRequest re-registers a reconnecting client's watches.
type SetWatchesRequest struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// SetWatches2Request adds persistent watches (3.6 and later).
type SetWatches2Request struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// AuthPacket: setAuth (addauth).
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// WatcherEvent is a notification's body.
type WatcherEvent struct {
	Type  EventType
	State State
	Path  string
}

// PathResponse: create, sync.
type PathResponse struct {
	Path string
}

// Create2Response: create2, createTTL, createContainer.
type Create2Response struct {
	Path string
	Stat Stat
}

// StatResponse: exists, setData, setACL.
type StatResponse struct {
	Stat Stat
}

// GetDataResponse: getData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// GetChildrenResponse: getChildren.
type GetChildrenResponse struct {
	Children []string
}

// GetChildren2Response: getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// GetACLResponse: getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// ErrorResponse is a failed multi operation's result.
type ErrorResponse struct {
	Err ErrCode
}

// RequestForOp is a new request record for an opcode, nil for one this
// package does not know; close and ping have an empty record.
func RequestForOp(op int32) any {
	switch op {
	case OpClose, OpPing:
		return &struct{}{}
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete, OpCheck:
		return &PathVersionRequest{}
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}
	case OpGetACL, OpSync, OpGetEphemerals, OpGetAllChildrenNumber:
		return &PathRequest{}
	case OpSetACL:
		return &SetACLRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpSetWatches:
		return &SetWatchesRequest{}
	case OpSetWatches2:
		return &SetWatches2Request{}
	case OpSetAuth:
		return &AuthPacket{}
	case OpMulti, OpMultiRead:
		return &MultiRequest{}
	}
	return nil
}

// MultiOp is one operation of a multi: its header and its request record.
type MultiOp struct {
	Header MultiHeader
	Op     any
}

// MultiRequest is a multi (or multiRead): operations, then a done header.
type MultiRequest struct {
	Ops []MultiOp
}

// Encode writes the operations and the done header.
func (r *MultiRequest) Encode(buf []byte) (int, error) {
	total := 0
	for _, op := range r.Ops {
		op.Header.Done = false
		n, err := encodeValue(buf[total:], reflect.ValueOf(&op.Header))
		total += n
		if err != nil {
			return total, err
		}
		n, err = encodeValue(buf[total:], reflect.ValueOf(op.Op))
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := encodeValue(buf[total:], reflect.ValueOf(&MultiHeader{Type: -1, Done: true, Err: -1}))
	return total + n, err
}

// Decode reads operations up to the done header.
func (r *MultiRequest) Decode(buf []byte) (int, error) {
	r.Ops = r.Ops[:0]
	total := 0
	for {
		var header MultiHeader
		n, err := decodeValue(buf[total:], reflect.ValueOf(&header))
		total += n
		if err != nil {
			return total, err
		}
		if header.Done {
			return total, nil
		}
		req := RequestForOp(header.Type)
		if req == nil {
			return total, ErrUnhandledFieldType
		}
		n, err = decodeValue(buf[total:], reflect.ValueOf(req))
		total += n
		if err != nil {
			return total, err
		}
		r.Ops = append(r.Ops, MultiOp{header, req})
	}
}

// MultiResult is one operation's result in a multi's reply: Type is the
// operation's opcode, or OpError with Err set.
type MultiResult struct {
	Type     int32
	Err      ErrCode
	Path     string   // create, create2
	Stat     *Stat    // create2, setData, getData
	Data     []byte   // getData (multiRead)
	Children []string // getChildren (multiRead)
}

// MultiResponse is a multi's reply: results, then a done header.
type MultiResponse struct {
	Results []MultiResult
}

// Encode writes each result as a server does.
func (r *MultiResponse) Encode(buf []byte) (int, error) {
	total := 0
	put := func(v any) error {
		n, err := encodeValue(buf[total:], reflect.ValueOf(v))
		total += n
		return err
	}
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type, Err: res.Err}
		if res.Type != OpError {
			h.Err = ErrOk
		}
		if err := put(&h); err != nil {
			return total, err
		}
		var err error
		switch res.Type {
		case OpError:
			err = put(&ErrorResponse{res.Err})
		case OpCreate:
			err = put(&PathResponse{res.Path})
		case OpCreate2, OpCreateTTL, OpCreateContainer:
			err = put(&Create2Response{res.Path, statOrZero(res.Stat)})
		case OpSetData:
			err = put(&StatResponse{statOrZero(res.Stat)})
		case OpGetData:
			err = put(&GetDataResponse{res.Data, statOrZero(res.Stat)})
		case OpGetChildren:
			err = put(&GetChildrenResponse{res.Children})
		}
		if err != nil {
			return total, err
		}
	}
	err := put(&MultiHeader{Type: -1, Done: true, Err: -1})
	return total, err
}

func statOrZero(s *Stat) Stat {
	if s == nil {
		return Stat{}
	}
	return *s
}

// Decode reads the results up to the done header.
func (r *MultiResponse) Decode(buf []byte) (int, error) {
	r.Results = r.Results[:0]
	total := 0
	get := func(v any) error {
		n, err := decodeValue(buf[total:], reflect.ValueOf(v))
		total += n
		return err
	}
	for {
		var h MultiHeader
		if err := get(&h); err != nil {
			return total, err
		}
		if h.Done {
			return total, nil
		}
		res := MultiResult{Type: h.Type, Err: h.Err}
		var err error
		switch h.Type {
		case OpError:
			var e ErrorResponse
			err = get(&e)
			res.Err = e.Err
		case OpCreate:
			var p PathResponse
			err = get(&p)
			res.Path = p.Path
		case OpCreate2, OpCreateTTL, OpCreateContainer:
			var c Create2Response
			err = get(&c)
			res.Path, res.Stat = c.Path, &c.Stat
		case OpSetData:
			var s StatResponse
			err = get(&s)
			res.Stat = &s.Stat
		case OpGetData:
			var d GetDataResponse
			err = get(&d)
			res.Data, res.Stat = d.Data, &d.Stat
		case OpGetChildren:
			var c GetChildrenResponse
			err = get(&c)
			res.Children = c.Children
		case OpDelete, OpCheck:
		default:
			return total, ErrUnhandledFieldType
		}
		if err != nil {
			return total, err
		}
		r.Results = append(r.Results, res)
	}
}
