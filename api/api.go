// Package api defines the typed lock API that both an embedded node
// (cluster.Node) and the remote client (client.Client) implement, so code
// can switch between them without change. The types double as the JSON
// bodies of the HTTP API (/v1/...); durations travel as integer
// milliseconds.
package api

import (
	"context"
	"errors"
	"time"
)

// Errors callers branch on. Both implementations return these (wrapped);
// use errors.Is.
var (
	ErrLocked         = errors.New("locknode: held by another owner")           // HTTP 423
	ErrNotOwner       = errors.New("locknode: not the owner")                   // HTTP 409
	ErrNotHeld        = errors.New("locknode: not held")                        // HTTP 404
	ErrNotFound       = errors.New("locknode: not found")                       // HTTP 404
	ErrWaitTimeout    = errors.New("locknode: wait timed out")                  // HTTP 408
	ErrNoLeader       = errors.New("locknode: no leader reachable")             // HTTP 503
	ErrBadRequest     = errors.New("locknode: bad request")                     // HTTP 400
	ErrSessionExpired = errors.New("locknode: session unknown or expired")      // HTTP 410
	ErrStaleFence     = errors.New("locknode: fence token older than the last") // HTTP 409
	ErrConflict       = errors.New("locknode: conflicting lock parameters")     // HTTP 409
	ErrLimit          = errors.New("locknode: over a limit")                    // HTTP 400
	ErrCancelled      = errors.New("locknode: wait cancelled")                  // HTTP 408
	ErrLockDelay      = errors.New("locknode: key in lock-delay")               // HTTP 423
	ErrMaxHold        = errors.New("locknode: max hold time reached")           // HTTP 409
	ErrOutOfMemory    = errors.New("locknode: key space over its memory limit") // HTTP 507
)

// Error codes in JSON error bodies {"code": ..., "message": ...}. One table,
// shared by the HTTP server and the client.
const (
	CodeLocked         = "locked"
	CodeNotOwner       = "not_owner"
	CodeNotHeld        = "not_held"
	CodeNotFound       = "not_found"
	CodeWaitTimeout    = "wait_timeout"
	CodeNoLeader       = "no_leader"
	CodeBadRequest     = "bad_request"
	CodeSessionExpired = "session_expired"
	CodeStaleFence     = "stale_fence"
	CodeConflict       = "conflict"
	CodeLimit          = "limit"
	CodeCancelled      = "cancelled"
	CodeLockDelay      = "lock_delay"
	CodeMaxHold        = "max_hold"
	CodeOutOfMemory    = "out_of_memory"
	CodeInternal       = "internal"
)

// ErrorBody is the JSON body of every non-2xx HTTP answer.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ElectionPrefix is prepended to an election's name to form the key of
// the lock behind it: election E is the lock "election/E". Permissions and
// key patterns apply to that key.
const ElectionPrefix = "election/"

// Mode names (JSON "mode").
const (
	ModeExclusive = "exclusive"
	ModeShared    = "shared"
	ModeSemaphore = "semaphore"
)

// ModeList names the modes for an error that refuses another.
const ModeList = ModeExclusive + " (the default), " + ModeShared + " or " + ModeSemaphore + " (with permits)"

// AcquireRequest asks for a lock (POST /v1/locks/acquire).
type AcquireRequest struct {
	Key       string   `json:"key,omitempty"`
	Keys      []string `json:"keys,omitempty"` // multi-lock: all or nothing
	Owner     string   `json:"owner"`          // owner token chosen by the client
	TTLMs     int64    `json:"ttl_ms"`         // lease length
	WaitMs    int64    `json:"wait_ms,omitempty"`
	Mode      string   `json:"mode,omitempty"`    // exclusive (default), shared, semaphore
	Permits   int      `json:"permits,omitempty"` // semaphore size
	Reentrant bool     `json:"reentrant,omitempty"`
	Session   string   `json:"session,omitempty"`
	RequestID string   `json:"request_id,omitempty"` // exactly-once retries
	LockDelay int64    `json:"lock_delay_ms,omitempty"`
	MaxHoldMs int64    `json:"max_hold_ms,omitempty"`
	// Meta is free metadata kept with the hold (and the waiter) and shown
	// by Inspect, List, LOCK.INFO and the mirror: who took the lock (host,
	// pid, command), bounded by Limits' Meta fields. A reentrant or
	// repeated acquire by the holder keeps the metadata of the first.
	Meta map[string]string `json:"meta,omitempty"`
}

// Lease is a granted hold.
type Lease struct {
	Key   string   `json:"key,omitempty"`
	Keys  []string `json:"keys,omitempty"`
	Owner string   `json:"owner"`
	Fence uint64   `json:"fence"`
	// TTLMs is the lease as granted or extended: Deadline minus the
	// cluster clock of the granting entry, which is less than asked when
	// a max hold caps it.
	TTLMs    int64 `json:"ttl_ms"`
	Count    int   `json:"count,omitempty"`       // reentrant hold count
	Deadline int64 `json:"deadline_ms,omitempty"` // cluster clock (FSM ms) when the lease ends
	// WaitedMs is how long the acquire waited in the queue, by the
	// cluster clock (which never runs ahead of real time): the grant came
	// at least this long after the request was sent, so a client's safe
	// deadline counts from its send time plus WaitedMs.
	WaitedMs int64 `json:"waited_ms,omitempty"`
}

// ReleaseRequest ends a hold (POST /v1/locks/release).
type ReleaseRequest struct {
	Key       string   `json:"key,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	Owner     string   `json:"owner"`
	Reentrant bool     `json:"reentrant,omitempty"` // decrement the count instead of ending the hold
	Force     bool     `json:"force,omitempty"`     // administrative: release whoever holds it
	RequestID string   `json:"request_id,omitempty"`
}

// ReleaseResult says what a release did.
type ReleaseResult struct {
	Released bool `json:"released"` // the hold is gone
	Count    int  `json:"count"`    // remaining reentrant count
}

// ExtendRequest renews a lease (POST /v1/locks/extend).
type ExtendRequest struct {
	Key       string   `json:"key,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	Owner     string   `json:"owner"`
	TTLMs     int64    `json:"ttl_ms"`
	RequestID string   `json:"request_id,omitempty"`
}

// Holder is one hold in LockInfo.
type Holder struct {
	Owner    string `json:"owner"`
	Mode     string `json:"mode"`
	Count    int    `json:"count"`
	Fence    uint64 `json:"fence"`
	TTLMs    int64  `json:"ttl_ms"` // remaining
	Session  string `json:"session,omitempty"`
	Deadline int64  `json:"deadline_ms"`
	// Meta is the metadata given at acquire (the waiter's, for a hold
	// handed over from the queue).
	Meta map[string]string `json:"meta,omitempty"`
	// GrantedMs is the cluster time (unix ms, within about a second of
	// wall time) of the grant; a reentrant acquire keeps the first one.
	// 0 for a hold restored from a snapshot taken before it was kept.
	GrantedMs int64 `json:"granted_ms"`
	// ExtendedMs is the cluster time of the last renewal of the lease
	// (extend, PEXPIRE, or a reentrant acquire that moved the deadline);
	// 0: never renewed.
	ExtendedMs int64 `json:"extended_ms,omitempty"`
}

// Waiter is one queued acquire in LockInfo, in queue order.
type Waiter struct {
	ID     string            `json:"id"`
	Owner  string            `json:"owner"`
	Mode   string            `json:"mode"`
	Keys   []string          `json:"keys,omitempty"`
	WaitMs int64             `json:"wait_ms"` // remaining
	Meta   map[string]string `json:"meta,omitempty"`
	// QueuedMs is the cluster time (unix ms) the waiter queued.
	QueuedMs int64 `json:"queued_ms"`
}

// LockInfo describes one lock (GET /v1/locks/{key}).
type LockInfo struct {
	Key          string   `json:"key"`
	Kind         string   `json:"kind"` // lock, or the Redis type (string, hash, ...)
	Permits      int      `json:"permits,omitempty"`
	Fence        uint64   `json:"fence"`
	Holders      []Holder `json:"holders"`
	Waiters      []Waiter `json:"waiters"`
	LockDelayMs  int64    `json:"lock_delay_remaining_ms,omitempty"`
	TTLMs        int64    `json:"ttl_ms"` // remaining on the key; -1 none
	AppliedIndex uint64   `json:"applied_index"`
	// State is StateHeld, StateFree or StateValue (StateOf).
	State string `json:"state,omitempty"`
	// Index is the index of the key's last change as the answering node
	// knows it (blocking queries, Watch): a later change of the key has a
	// larger one. It may be above the change's own index (never below),
	// so a watcher may wake without a change, never miss one. 0: not
	// known (an implementation without change indexes).
	Index uint64 `json:"index,omitempty"`
}

// StateValue is LockInfo.State of a key that holds a Redis value, not a
// lock; a lock's state is StateHeld (one or more holds) or StateFree (no
// hold: nothing at the key, only waiters, or lock-delay).
const StateValue = "value"

// StateOf returns the state li describes.
func StateOf(li LockInfo) string {
	switch {
	case len(li.Holders) > 0:
		return StateHeld
	case li.Kind != "" && li.Kind != "lock" && li.Kind != "none":
		return StateValue
	}
	return StateFree
}

// FreeLock is the LockInfo of a key with nothing at it, as blocking
// queries and Watch answer it (Inspect answers ErrNotFound).
func FreeLock(key string, index uint64) LockInfo {
	return LockInfo{Key: key, Kind: "none", Holders: []Holder{}, Waiters: []Waiter{}, TTLMs: -1, State: StateFree, Index: index}
}

// LockWatcher is implemented by client.Client, cluster.Node and
// cluster.Local (it is not part of Locker).
type LockWatcher interface {
	// Watch sends key's state at once and then after each change, until
	// ctx ends; the channel is closed then. A state not yet received when
	// the next one arrives is replaced: a slow reader sees the latest,
	// not every step. It returns an error only for a request that can
	// never succeed (a bad key, no permission).
	Watch(ctx context.Context, key string) (<-chan LockInfo, error)
}

// ReadOptions choose the consistency of a read.
type ReadOptions struct {
	// Stale allows answering from the local node's state without
	// confirming leadership: fast, possibly out of date. Default false
	// (linearizable).
	Stale bool `json:"stale,omitempty"`
}

// ListRequest pages through locks by prefix (GET /v1/locks?prefix=&after=&limit=).
type ListRequest struct {
	Prefix string `json:"prefix,omitempty"`
	After  string `json:"after,omitempty"` // last key of the previous page
	Limit  int    `json:"limit,omitempty"` // default 100, max 10000
	ReadOptions
}

// ListResult is one page.
type ListResult struct {
	Locks []LockInfo `json:"locks"`
	Next  string     `json:"next,omitempty"` // pass as After; empty at the end
	// Index is the index of the last change of any key under the prefix
	// as the answering node knows it (see LockInfo.Index); 0: not known.
	Index uint64 `json:"index,omitempty"`
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID    string `json:"id"`
	TTLMs int64  `json:"ttl_ms"`
}

// FenceResult answers FenceCheck.
type FenceResult struct {
	OK      bool   `json:"ok"`
	Highest uint64 `json:"highest"` // highest token seen for the resource after the check
}

// Leader is the current holder of an election.
type Leader struct {
	Election string `json:"election"`
	Value    string `json:"value"` // the leader's proclaimed value; empty if none
	Fence    uint64 `json:"fence"`
	// Token is the campaign's secret: Campaign returns it to the
	// campaigner only (Observe never shows it), and Resign and Proclaim
	// need it. The value alone is public and proves nothing.
	Token string `json:"token,omitempty"`
}

// Public returns ld without its secret, as observers see it.
func (ld Leader) Public() Leader {
	ld.Token = ""
	return ld
}

// Member is one raft server in Status.
type Member struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	// LastContactMs is, in the leader's status, how long ago (ms) this
	// member last answered the leader's replication (heartbeats
	// included); absent for the leader itself, in a follower's status,
	// and for a member that never answered this leader.
	LastContactMs *int64 `json:"last_contact_ms,omitempty"`
	// Unreachable is set in the leader's status for a member that has not
	// answered the leader for three heartbeat timeouts (900 ms by
	// default): down, cut off, or added at a wrong address.
	Unreachable bool `json:"unreachable,omitempty"`
	// HTTPAddr is the member's advertised HTTP API address as the
	// answering node last learned it from the member; absent when the
	// member never answered that node.
	HTTPAddr string `json:"http_addr,omitempty"`
}

// Status describes a node (GET /v1/status).
type Status struct {
	ID         string `json:"id"`
	Leader     string `json:"leader"` // leader's node id; empty if none known
	LeaderAddr string `json:"leader_addr,omitempty"`
	// LeaderHTTPAddr is the leader's HTTP API address, when the answering
	// node has learned it (Member.HTTPAddr).
	LeaderHTTPAddr string         `json:"leader_http_addr,omitempty"`
	State          string         `json:"state"`
	Term           uint64         `json:"term"`
	AppliedIndex   uint64         `json:"applied_index"`
	CommitIndex    uint64         `json:"commit_index"`
	Members        []Member       `json:"members"`
	FSMTimeMs      int64          `json:"fsm_time_ms"`
	Locks          int            `json:"locks"`
	Keys           int            `json:"keys"`
	Waiters        int            `json:"waiters"`
	Sessions       int            `json:"sessions"`
	HTTPAddr       string         `json:"http_addr,omitempty"`
	RESPAddr       string         `json:"resp_addr,omitempty"`
	Mirror         map[string]any `json:"mirror,omitempty"`
	// KeyspaceBytes is the key space's accounted size, which
	// KeyspaceMaxBytes bounds (0: no limit); past it, writes that grow
	// the key space are refused with ErrOutOfMemory.
	KeyspaceBytes    int64 `json:"keyspace_bytes"`
	KeyspaceMaxBytes int64 `json:"keyspace_max_bytes"`
	// ClusterVersion is the active cluster version (docs/UPGRADING.md);
	// ClusterVersions the range this node's binary runs ("1..1").
	ClusterVersion  uint32 `json:"cluster_version"`
	ClusterVersions string `json:"cluster_versions,omitempty"`
	// Release is the node's binary's release (`locknode version`), when
	// the server knows it.
	Release string `json:"release,omitempty"`
	// Halted, when set, says why this node stopped applying the log: an
	// entry or snapshot of a cluster version its binary does not run.
	Halted string `json:"apply_halted,omitempty"`
}

// Locker is the lock API. Every method that can block takes a context:
// cancelling it abandons the call (a queued waiter is removed through the
// log).
type Locker interface {
	// Acquire blocks until the lock is granted, req.WaitMs passes
	// (ErrWaitTimeout) or ctx ends. WaitMs 0 with Acquire means wait
	// until ctx ends.
	Acquire(ctx context.Context, req AcquireRequest) (Lease, error)
	// TryAcquire returns at once: a lease, or ErrLocked.
	TryAcquire(ctx context.Context, req AcquireRequest) (Lease, error)
	Release(ctx context.Context, req ReleaseRequest) (ReleaseResult, error)
	Extend(ctx context.Context, req ExtendRequest) (Lease, error)
	Inspect(ctx context.Context, key string, opts ReadOptions) (LockInfo, error)
	List(ctx context.Context, req ListRequest) (ListResult, error)

	OpenSession(ctx context.Context, ttl time.Duration) (SessionInfo, error)
	KeepAlive(ctx context.Context, id string) (SessionInfo, error)
	CloseSession(ctx context.Context, id string) error

	// FenceCheck is CheckAndAdvance: ok iff token >= the highest token
	// seen for resource, which it then records.
	FenceCheck(ctx context.Context, resource string, token uint64) (FenceResult, error)

	// Campaign blocks until req.Value becomes leader of req.Election (or
	// ctx ends); leadership is bound to req.Session and ends with it or
	// Resign. Each campaign is its own identity, req.Token (chosen by the
	// implementation when empty; repeating a campaign with the same token
	// answers the same leadership): two campaigns with the same value are
	// two candidates, one waiting for the other.
	Campaign(ctx context.Context, req CampaignRequest) (Leader, error)
	// Resign ends the leadership Campaign returned (ErrNotOwner without
	// its token, ErrNotHeld when it has ended).
	Resign(ctx context.Context, leader Leader) error
	// Proclaim changes the value a leader publishes, keeping leadership
	// and fence, in one step; it returns the updated leadership.
	Proclaim(ctx context.Context, leader Leader, value string) (Leader, error)
	// Observe streams the election's leader on every change until ctx
	// ends; the channel is closed then.
	Observe(ctx context.Context, election string) (<-chan Leader, error)

	Status(ctx context.Context) (Status, error)
}

// MaxWait is the longest wait a blocking acquire accepts in one request
// when the caller gives none (WaitMs 0 with Acquire): after it the server
// answers ErrWaitTimeout and the client re-issues the request (with a new
// request id: the old one names a waiter that has ended), so a server
// never keeps a waiter for a client that went away.
const MaxWait = 5 * time.Minute
