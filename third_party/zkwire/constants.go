package zkwire

// Opcodes of requests (RequestHeader.Opcode) and of a multi's operations.
const (
	OpNotify               = 0
	OpCreate               = 1
	OpDelete               = 2
	OpExists               = 3
	OpGetData              = 4
	OpSetData              = 5
	OpGetACL               = 6
	OpSetACL               = 7
	OpGetChildren          = 8
	OpSync                 = 9
	OpPing                 = 11
	OpGetChildren2         = 12
	OpCheck                = 13
	OpMulti                = 14
	OpCreate2              = 15
	OpReconfig             = 16
	OpCheckWatches         = 17
	OpRemoveWatches        = 18
	OpCreateContainer      = 19
	OpDeleteContainer      = 20
	OpCreateTTL            = 21
	OpMultiRead            = 22
	OpClose                = -11
	OpSetAuth              = 100
	OpSetWatches           = 101
	OpSASL                 = 102
	OpGetEphemerals        = 103
	OpGetAllChildrenNumber = 104
	OpSetWatches2          = 105
	OpAddWatch             = 106
	OpWhoAmI               = 107
	OpError                = -1
)

// Special xids: a reply with XidNotification carries a WatcherEvent, one
// with XidPing answers a ping, XidSetWatches answers setWatches.
const (
	XidNotification = -1
	XidPing         = -2
	XidAuth         = -4
	XidSetWatches   = -8
)

// EventType is a WatcherEvent's type.
type EventType int32

// Watcher event types.
const (
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
	EventSession             EventType = -1
	EventNotWatching         EventType = -2
)

// State is a WatcherEvent's keeper state.
type State int32

// Keeper states.
const (
	StateDisconnected  State = 0
	StateSyncConnected State = 3
	StateAuthFailed    State = 4
	StateExpired       State = -112
)

// ErrCode is the error code in a reply header.
type ErrCode int32

// Error codes (KeeperException.Code).
const (
	ErrOk                       ErrCode = 0
	ErrSystemError              ErrCode = -1
	ErrRuntimeInconsistency     ErrCode = -2
	ErrDataInconsistency        ErrCode = -3
	ErrConnectionLoss           ErrCode = -4
	ErrMarshallingError         ErrCode = -5
	ErrUnimplemented            ErrCode = -6
	ErrOperationTimeout         ErrCode = -7
	ErrBadArguments             ErrCode = -8
	ErrNewConfigNoQuorum        ErrCode = -13
	ErrReconfigInProgress       ErrCode = -14
	ErrAPIError                 ErrCode = -100
	ErrNoNode                   ErrCode = -101
	ErrNoAuth                   ErrCode = -102
	ErrBadVersion               ErrCode = -103
	ErrNoChildrenForEphemerals  ErrCode = -108
	ErrNodeExists               ErrCode = -110
	ErrNotEmpty                 ErrCode = -111
	ErrSessionExpired           ErrCode = -112
	ErrInvalidCallback          ErrCode = -113
	ErrInvalidACL               ErrCode = -114
	ErrAuthFailed               ErrCode = -115
	ErrClosing                  ErrCode = -116
	ErrNothing                  ErrCode = -117
	ErrSessionMoved             ErrCode = -118
	ErrNotReadOnly              ErrCode = -119
	ErrEphemeralOnLocalSession  ErrCode = -120
	ErrNoWatcher                ErrCode = -121
	ErrReconfigDisabled         ErrCode = -123
	ErrSessionClosedRequireSASL ErrCode = -124
	ErrQuotaExceeded            ErrCode = -125
	ErrThrottled                ErrCode = -127
)

// Create flags (CreateMode).
const (
	FlagPersistent                  = 0
	FlagEphemeral                   = 1
	FlagSequence                    = 2
	FlagEphemeralSequential         = 3
	FlagContainer                   = 4
	FlagTTL                         = 5
	FlagPersistentSequentialWithTTL = 6
)

// IsEphemeral says whether a create flag makes an ephemeral node.
func IsEphemeral(flags int32) bool { return flags == FlagEphemeral || flags == FlagEphemeralSequential }

// IsSequential says whether a create flag appends a sequence number.
func IsSequential(flags int32) bool {
	return flags == FlagSequence || flags == FlagEphemeralSequential || flags == FlagPersistentSequentialWithTTL
}

// ACL permissions.
const (
	PermRead = 1 << iota
	PermWrite
	PermCreate
	PermDelete
	PermAdmin
	PermAll = 0x1f
)
