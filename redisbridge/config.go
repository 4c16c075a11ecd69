package redisbridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/redisbridge/resp"
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Addr is the RESP listen address ("host:port"); used by the caller to
	// listen and reported in INFO. Default "127.0.0.1:6379".
	Addr string
	// Users, when set, turns on authentication and permissions: every
	// command but AUTH, HELLO, QUIT and RESET needs an authenticated user
	// (AUTH user pass, AUTH pass for "default", HELLO 3 AUTH user pass),
	// and each command is checked against the user's categories, key and
	// channel patterns (see package auth). Nil: open, as before.
	Users *auth.Store
	// Password is shorthand for Users holding one user, "default" with
	// this password and every permission, as Redis' requirepass. Ignored
	// when Users is set. Empty: no password.
	Password string
	// Audit receives forced releases (LOCK.RELEASE ... FORCE) and counts
	// refused requests. Nil: not audited.
	Audit *auth.Audit
	// MaxConns is the most concurrent client connections; more are
	// accepted and closed with "ERR max number of clients reached".
	// Default 10000.
	MaxConns int
	// MaxConnsPerAddr is the most connections open at once from one
	// source IP; one more is answered "ERR max number of clients from
	// one address reached" and closed, so one address cannot take every
	// slot of MaxConns. Default DefaultMaxConnsPerAddr; negative: none.
	MaxConnsPerAddr int
	// AuthTimeout closes a connection that has not authenticated this
	// long after it connected (or after RESET), when authentication is on
	// and the connection is not the anonymous default user: connections
	// that never AUTH cannot hold slots. Default DefaultAuthTimeout;
	// negative: never.
	AuthTimeout time.Duration
	// AuthThrottle delays the answers to repeated failed AUTH and HELLO
	// AUTH, and disconnects a connection after too many (see
	// auth.Throttle); share one with the HTTP API so a source address is
	// counted across both. Nil: a Throttle with the defaults.
	AuthThrottle *auth.Throttle
	// IdleTimeout closes a connection that sent nothing for this long
	// (Redis' "timeout"); subscribers are exempt. 0 takes the default,
	// 0 < d: that long; negative: never. Default never (-1), as Redis.
	IdleTimeout time.Duration
	// WriteTimeout bounds one flush of replies to a client; a client that
	// does not read is disconnected. Default 30s.
	WriteTimeout time.Duration
	// RequestTimeout bounds one Apply or Read (not a LOCK.ACQUIRE ... WAIT,
	// which is bounded by its own WAIT). Default 30s.
	RequestTimeout time.Duration
	// MaxRequestBytes bounds one command's total argument bytes; larger
	// commands close the connection with a protocol error. Default 64 MiB.
	MaxRequestBytes int
	// MaxArgs bounds one command's argument count. Default 1 Mi.
	MaxArgs int
	// MaxBulkBytes bounds one argument. Default 16 MiB.
	MaxBulkBytes int
	// MaxPendingPushes bounds the pub/sub messages queued for one slow
	// subscriber; beyond it the subscriber is disconnected. Default 100000.
	MaxPendingPushes int
	// PubSubHardLimit disconnects a subscriber at once when its pending
	// output (messages queued for it, or being written to it, in bytes)
	// passes it: Redis' client-output-buffer-limit pubsub hard limit.
	// Delivery to other subscribers and the apply path never wait for a
	// slow one. Default 32 MiB; negative: none.
	PubSubHardLimit int64
	// PubSubSoftLimit disconnects a subscriber whose pending output stays
	// above it for longer than PubSubSoftFor (checked as messages arrive):
	// Redis' soft limit. Default 8 MiB for 60s; a negative limit: none.
	PubSubSoftLimit int64
	PubSubSoftFor   time.Duration
	// TrackingTableMaxKeys bounds this node's client-side caching table:
	// the keys tracking clients have read and not yet seen invalidated
	// (Redis' tracking-table-max-keys), and separately the BCAST prefixes
	// of all its clients. Past it a key is evicted with an invalidation to
	// its readers, as Redis does; a CLIENT TRACKING ... BCAST whose new
	// prefixes would pass it is refused. Default 1,000,000.
	TrackingTableMaxKeys int
	// Logger receives connection-level problems. Default: null logger.
	Logger hclog.Logger
	// TracerProvider makes a root span of each command (trace.go), sampled
	// by its sampler. Nil: no spans.
	TracerProvider trace.TracerProvider
	// Version is the redis_version reported by HELLO and INFO. Default
	// "7.2.4": clients pick features by version (StackExchange.Redis uses
	// SET IFEQ / DELEX from 8.4), so report one whose commands we
	// implement fully.
	Version string
	// RunID is INFO's run_id (40 hex chars in Redis). Default: derived
	// from NodeID.
	RunID string
	// NodeID names this node in INFO and SENTINEL replies. Default
	// "locknode".
	NodeID string
	// MasterName is the Sentinel service name listed by SENTINEL MASTERS
	// (redis-py's Sentinel looks the service up there). GET-MASTER-ADDR-BY-
	// NAME answers for any name. Default "locknode".
	MasterName string
	// Peers returns the RESP addresses ("host:port") of the live cluster
	// members, this node included, for SENTINEL SENTINELS, WAIT and INFO.
	// Default: only this node.
	Peers func() []string
	// Cluster turns on the Redis Cluster interface (cmd_cluster.go):
	// CLUSTER SHARDS/SLOTS/NODES describe the raft group as one shard
	// owning every slot, mastered by the leader; multi-key commands whose
	// keys hash to different slots answer CROSSSLOT, as in Redis Cluster.
	// Off (the default): CLUSTER answers "cluster support disabled", as a
	// standalone Redis, and Sentinel-aware or plain clients are served.
	Cluster bool
	// Members returns the members of the raft group, this node included,
	// for the Cluster interface. Default: this node alone.
	Members func() []Member
	// ExtraInfo, when set, returns more INFO sections, each a "# Name"
	// line followed by field:value lines (CRLF- or LF-terminated), e.g.
	// the mirror's (mirror.Mirror.InfoText). They are listed after the built-in
	// sections by INFO, INFO all/everything/default, and INFO <name>.
	// Called on every such INFO; it must not block.
	ExtraInfo func() string
	// SlowlogSlowerThan: commands that run at least this long are kept
	// in SLOWLOG (this node's, in memory). Default 10ms (Redis'
	// slowlog-log-slower-than 10000); negative: none. CONFIG SET
	// slowlog-log-slower-than changes it at run time (0: every command).
	SlowlogSlowerThan time.Duration
	// SlowlogMaxLen: how many SLOWLOG entries are kept, newest first.
	// Default 128 (Redis' slowlog-max-len); CONFIG SET changes it.
	SlowlogMaxLen int
	// NotifyKeyspaceEvents is this node's notify-keyspace-events at start,
	// in Redis' letters ("KEA", "Egx" ...): which keyspace notifications
	// its subscribers receive. Default "" (none), as Redis; CONFIG SET
	// notify-keyspace-events changes it at run time, on this node only.
	NotifyKeyspaceEvents string
}

// Member is one member of the raft group as the Cluster interface
// describes it.
type Member struct {
	ID string // raft server id
	// RESP is the member's advertised RESP address ("host:port"); empty
	// when unknown (the member never answered): it is then left out.
	RESP string
	// Raft is the member's raft address, shown as the cluster bus port in
	// CLUSTER NODES.
	Raft string
	// Reachable: the member answered lately. An unreachable member is
	// left out of CLUSTER SHARDS and SLOTS and marked fail in NODES, as
	// Redis treats a failed replica.
	Reachable bool
}

// Defaults.
const (
	DefaultAddr             = "127.0.0.1:6379"
	DefaultMaxConns         = 10000
	DefaultMaxConnsPerAddr  = 1000
	DefaultAuthTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 30 * time.Second
	DefaultRequestTimeout   = 30 * time.Second
	DefaultMaxPendingPushes = 100000
	DefaultPubSubHardLimit  = 32 << 20
	DefaultPubSubSoftLimit  = 8 << 20
	DefaultPubSubSoftFor    = 60 * time.Second
	DefaultVersion          = "7.2.4"
	DefaultNodeID           = "locknode"
	DefaultMasterName       = "locknode"
	DefaultSlowlogSlower    = 10 * time.Millisecond
	DefaultSlowlogMaxLen    = 128
)

// DefaultTrackingTableMaxKeys is Redis' default tracking-table-max-keys.
const DefaultTrackingTableMaxKeys = 1000000

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	c := Config{
		Addr:             DefaultAddr,
		MaxConns:         DefaultMaxConns,
		MaxConnsPerAddr:  DefaultMaxConnsPerAddr,
		AuthTimeout:      DefaultAuthTimeout,
		IdleTimeout:      -1,
		WriteTimeout:     DefaultWriteTimeout,
		RequestTimeout:   DefaultRequestTimeout,
		MaxRequestBytes:  resp.DefaultMaxCommandBytes,
		MaxArgs:          resp.DefaultMaxArgs,
		MaxBulkBytes:     resp.DefaultMaxBulkBytes,
		MaxPendingPushes: DefaultMaxPendingPushes,
		PubSubHardLimit:  DefaultPubSubHardLimit,
		PubSubSoftLimit:  DefaultPubSubSoftLimit,
		PubSubSoftFor:    DefaultPubSubSoftFor,
		Logger:           hclog.NewNullLogger(),
		Version:          DefaultVersion,
		NodeID:           DefaultNodeID,
		MasterName:       DefaultMasterName,
	}
	c.TrackingTableMaxKeys = DefaultTrackingTableMaxKeys
	c.SlowlogSlowerThan, c.SlowlogMaxLen = DefaultSlowlogSlower, DefaultSlowlogMaxLen
	return c
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = d.MaxConnsPerAddr
	}
	if c.AuthTimeout == 0 {
		c.AuthTimeout = d.AuthTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = d.MaxRequestBytes
	}
	if c.MaxArgs == 0 {
		c.MaxArgs = d.MaxArgs
	}
	if c.MaxBulkBytes == 0 {
		c.MaxBulkBytes = d.MaxBulkBytes
	}
	if c.MaxPendingPushes == 0 {
		c.MaxPendingPushes = d.MaxPendingPushes
	}
	if c.TrackingTableMaxKeys == 0 {
		c.TrackingTableMaxKeys = d.TrackingTableMaxKeys
	}
	if c.PubSubHardLimit == 0 {
		c.PubSubHardLimit = d.PubSubHardLimit
	}
	if c.PubSubSoftLimit == 0 {
		c.PubSubSoftLimit = d.PubSubSoftLimit
	}
	if c.PubSubSoftFor == 0 {
		c.PubSubSoftFor = d.PubSubSoftFor
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.NodeID == "" {
		c.NodeID = d.NodeID
	}
	if c.MasterName == "" {
		c.MasterName = d.MasterName
	}
	if c.RunID == "" {
		c.RunID = runIDFor(c.NodeID)
	}
	if c.SlowlogSlowerThan == 0 {
		c.SlowlogSlowerThan = DefaultSlowlogSlower
	}
	if c.SlowlogMaxLen == 0 {
		c.SlowlogMaxLen = DefaultSlowlogMaxLen
	}
	if c.AuthThrottle == nil {
		c.AuthThrottle = auth.NewThrottle(auth.ThrottleConfig{Logger: c.Logger})
	}
	return c
}

// Validate reports a Config that cannot work. Zero fields are valid (they
// take defaults).
func (c Config) Validate() error {
	switch {
	case c.MaxConns < 0, c.SlowlogMaxLen < 0, c.MaxRequestBytes < 0, c.MaxArgs < 0, c.MaxBulkBytes < 0, c.MaxPendingPushes < 0, c.TrackingTableMaxKeys < 0:
		return errors.New("redisbridge: config: limits must not be negative")
	case c.WriteTimeout < 0, c.RequestTimeout < 0, c.PubSubSoftFor < 0:
		return errors.New("redisbridge: config: timeouts must not be negative")
	case c.MaxArgs != 0 && c.MaxArgs < 8:
		return errors.New("redisbridge: config: MaxArgs must be at least 8")
	}
	if _, ok := parseNotifyFlags(c.NotifyKeyspaceEvents); !ok {
		return fmt.Errorf("redisbridge: config: NotifyKeyspaceEvents %q: a character names no event class (use Ag$lshzxeKEtmdn)", c.NotifyKeyspaceEvents)
	}
	for _, r := range c.Version {
		if r != '.' && (r < '0' || r > '9') {
			return fmt.Errorf("redisbridge: config: Version %q is not dotted numbers", c.Version)
		}
	}
	return nil
}
