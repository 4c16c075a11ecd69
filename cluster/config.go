package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
)

// Peer is one member of the initial configuration of a new cluster.
type Peer struct {
	ID   string // raft server id
	Addr string // raft address (host:port), as the peer advertises it
}

// Clock is the node's source of time. Now must carry a monotonic reading:
// the leader measures the cluster clock's progress with Now().Sub, every
// node the time since it applied an entry (its lower bound of the cluster
// clock, which a new leader starts from), and only the first leader of a
// fresh cluster uses the wall-clock part (UnixMilli) to seed the cluster
// clock. A reading that jumps ahead of real time, on any node, can end
// leases early. Tests inject a clock that runs at
// another rate or offset to check that leases never end early.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the default Clock (time.Now).
var SystemClock Clock = systemClock{}

// Config configures a Node. Zero fields take the defaults noted on each
// field (see DefaultConfig); Start validates the result.
type Config struct {
	// ID is this node's raft server id; required, unique in the cluster.
	ID string
	// DataDir holds the raft log (wal/, see LogStore), raft.db (the
	// stable store: term and vote, a bolt file) and snapshots/. Required.
	// Restarting with the same DataDir resumes the node with every lock,
	// session and waiter.
	DataDir string
	// LogStore is the raft log's format for a new DataDir: LogStoreWAL
	// ("wal", the default: hashicorp/raft-wal segments in DataDir/wal,
	// one fsync per appended batch) or LogStoreBolt ("bolt": the log in
	// raft.db, the layout before "wal"; bbolt syncs twice per batch).
	// A DataDir that already holds a log keeps its format whatever this
	// says (Start logs which and why at Info): raft.db with log entries
	// and no wal/ stays on bolt, so upgrading a node never hides an entry
	// it acknowledged. Every node of a cluster may use either.
	LogStore string

	// BindAddr is where the node listens for raft and forwarded requests
	// (one port, multiplexed). Default "127.0.0.1:0".
	BindAddr string
	// Advertise is the address other nodes dial; default: the bound
	// address (which must then not be a wildcard).
	Advertise string
	// Transport, when set, is used instead of building one from BindAddr
	// and Advertise (tests and TLS set-ups build their own). The node
	// owns it from Start on and closes it on Close.
	Transport Transport
	// PeerHandshakeTimeout and PeerMaxConns are the peer port's limits on
	// accepted connections when the node builds its own transport
	// (transport.Config's HandshakeTimeout and MaxConns; zero takes their
	// defaults, 10s and 1024). Ignored when Transport is set.
	PeerHandshakeTimeout time.Duration
	PeerMaxConns         int
	// PeerServerTLS and PeerClientTLS, both or neither, turn on mutual
	// TLS on the peer port (ignored when Transport is set): the server
	// side must require and verify client certificates
	// (tls.RequireAndVerifyClientCert) and the client side present one;
	// tlsutil.PeerConfigs builds such a pair. A peer is then the node its
	// certificate's Common Name names: forwarded commands and membership
	// changes are served only for current members, and a join also for
	// the node it adds. Default: plain TCP, anyone who reaches the port
	// is trusted.
	PeerServerTLS *tls.Config
	PeerClientTLS *tls.Config
	// Audit receives the forced releases and membership changes that
	// arrive over the peer port (forwarded by a member, or sent by
	// whoever reaches an open port), with the peer's certificate name
	// and address, as the client ports audit theirs. Nil: not audited.
	Audit *auth.Audit

	// Advertised are the addresses this node serves clients on (HTTP,
	// RESP) as clients should dial them; other members learn them through
	// PeerAddrs (for Sentinel discovery and INFO). Default: none.
	Advertised ClientAddrs

	// Bootstrap creates a new cluster when DataDir holds no raft state:
	// with Peers as the initial voters (which must include this node), or
	// with this node alone when Peers is empty. Every initial peer must
	// be started with the same Peers. Ignored when state exists.
	Bootstrap bool
	Peers     []Peer
	// Join lists addresses of running members; when DataDir holds no raft
	// state and Bootstrap is false, Start asks them in turn (any member
	// forwards to the leader) to add this node as a voter, until one
	// succeeds or Start's ctx ends.
	Join []string

	// Raft timing. The defaults are tuned for a LAN, so that a leader
	// crash is survived fast (target: new acquisitions succeed within 1 s,
	// median):
	//
	// HeartbeatTimeout, default 300ms: a follower that hears nothing for a
	// random time in [HT, 2HT) starts an election, so a crashed leader is
	// noticed after ~450 ms median; the leader heartbeats every HT/5
	// (60 ms; HT/10 on upstream raft, without our fork), far above
	// loopback/LAN round trips.
	HeartbeatTimeout time.Duration
	// ElectionTimeout, default 300ms: how long a candidate waits for
	// votes before trying again (randomised the same way). Raft requires
	// ElectionTimeout >= HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout, default 250ms: a leader that cannot reach a
	// quorum for this long steps down, so a partitioned leader stops
	// accepting writes (they fail with ErrNoLeader) before the majority
	// side elects a successor. Must be <= HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout: how often (randomly between 1 and 2 times this) the
	// leader resends each follower an AppendEntries with nothing new.
	// With locknode's raft fork (the locknode binary) followers learn a
	// commit at once from the AppendEntries the leader sends when its
	// commit index advances (third_party/raft FORK.md), so this only
	// bounds how late a follower that missed that message (a restart, a
	// dropped connection) learns the last commit: default 50ms, shorter
	// costs CPU and network for nothing else. A follower that holds and
	// knows committed the whole log is resent only every 16 of these
	// (the fork; an idle cluster's followers are). Built
	// against upstream raft (a program that embeds a node: our go.mod's
	// replace does not reach modules that import locknode) followers learn
	// every commit this way, so the default is 2ms there.
	CommitTimeout time.Duration
	// MaxAppendEntries, default 256: entries per AppendEntries and per
	// FSM batch. With raft's BatchApplyCh this is the group-commit size:
	// concurrent requests share one log write and one fsync.
	MaxAppendEntries int
	// SnapshotThreshold, default 8192: log entries between snapshots.
	SnapshotThreshold uint64
	// SnapshotInterval, default 30s: how often the threshold is checked.
	SnapshotInterval time.Duration
	// TrailingLogs, default 10240: entries kept after a snapshot so a
	// briefly absent follower catches up from the log, not a snapshot.
	TrailingLogs uint64
	// SnapshotRetain, default 2: snapshots kept on disk.
	SnapshotRetain int
	// FreeMemoryAfterSnapshot, default false: when each snapshot is
	// written (before raft reports it done), run debug.FreeOSMemory (a forced collection that returns
	// free heap pages to the OS), so the snapshot's transient sort list
	// (24-32 MB at 1M locks) does not stay in the resident set. It is a
	// process-wide collection once per snapshot, so it is off for
	// embedders; `locknode serve` and `dev` turn it on.
	FreeMemoryAfterSnapshot bool
	// RaftIOTimeout, default 2s: I/O deadline of raft's network RPCs.
	RaftIOTimeout time.Duration
	// DataFreeWarn, default 5% of the filesystem: while the data
	// directory's filesystem has less free space than this, the node
	// logs a WARN (checked every 10s, repeated once a minute). A full
	// disk stops the node's log appends and snapshots; the warning comes
	// first. DiskSpace{Off: true} silences it; the metrics
	// locknode_data_free_bytes and locknode_data_size_bytes are exported
	// either way.
	DataFreeWarn DiskSpace
	// StorageFaults, nil by default, is a seam for tests: it fails
	// operations on the raft log's segment files (LogStoreWAL) as a full
	// or failing disk would, beneath every wrapper of the log store, so
	// the node meets the errors as it would meet the disk's
	// (testcluster's disk nemesis).
	StorageFaults StorageFaults
	// Disk is the file system of the data directory (see Disk for what
	// goes through it); nil, the default: the operating system's
	// (OSDisk). Tests plug in a simulated disk that loses, at a crash,
	// what was written and not yet synced.
	Disk Disk

	// TickInterval, default 100ms: while anything in the table has a
	// deadline, the leader checks at least this often whether a lease,
	// wait, session or key fell due and proposes a Tick then, so expiries
	// and hand-offs happen within about one interval of their deadline.
	// The leader also wakes at the next deadline and after every applied
	// entry, so most expiries are quicker. With nothing due it sleeps
	// until the clock sync (ClockSyncInterval) or the next applied entry.
	TickInterval time.Duration
	// MinTickGap, default 2ms: the shortest time between two Ticks, so a
	// stale deadline can never make the leader propose in a loop.
	MinTickGap time.Duration
	// ClockSyncInterval, default 1s: a leader proposes a Tick when the
	// log's time has fallen this far behind its clock (at once in a new
	// term after an idle spell), so that every node's lower bound of the
	// cluster clock (DESIGN.md "Time") is fresh within this interval. It
	// is what a node elected right after its own restart, or a cluster
	// after a full restart, can lose of the idle time before: longer
	// makes that loss larger, shorter costs more small log writes on an
	// idle cluster (one per interval). Negative disables it.
	ClockSyncInterval time.Duration
	// RetryTimeout, default 3s: how long a request that is safe to
	// repeat (it carries a request id, or never reached a leader) is
	// retried while no leader is reachable, when the caller's ctx has no
	// deadline. A ctx with a deadline is retried until it ends, so an
	// embedded caller rides out an election within its own time limit.
	RetryTimeout time.Duration
	// CancelTimeout, default 5s: how long a blocked acquire whose ctx
	// ended keeps trying to remove its waiter from the queue.
	CancelTimeout time.Duration
	// WaiterLease, default 5s: how long the leader keeps a queued waiter
	// that no node says it waits for (each node says so every
	// WaiterLease/4) before it cancels it, so that a blocking acquire
	// whose node died is not later granted to nobody. A node cut off from
	// the leader for longer loses its waiters (their requests fail with
	// api.ErrCancelled): longer tolerates longer partitions, shorter frees
	// a dead node's place in the queue sooner. Negative disables it.
	WaiterLease time.Duration

	// ReadyMaxLagEntries, default DefaultReadyMaxLagEntries (4096): Ready
	// reports a node not ready when the leader's commit index is more
	// than this many entries past what the node applied (a node that
	// restarted or was cut off and is still catching up, or one whose
	// log store fails). Larger lets a far-behind node take reads sooner
	// (they wait for it to catch up); smaller turns a briefly slow
	// follower away from a load balancer sooner.
	ReadyMaxLagEntries uint64
	// ReadyMaxLag, default DefaultReadyMaxLag (1s): Ready reports a node
	// not ready when it does not learn the leader's commit index and
	// apply up to it within this long, or when a write to its log store
	// failed within this long (or failed and none has succeeded since).
	// It is also how long Ready may take to answer.
	ReadyMaxLag time.Duration

	// ManualUpgrade: the leader does not activate a newer cluster version
	// by itself once every member runs it; Node.Upgrade (`locknode
	// cluster upgrade`) does. Default false: automatic, as etcd does,
	// so that a rolling upgrade needs no extra step and no node is left
	// with new features off. Set it to keep the rollback window open
	// after the last member is upgraded: activation closes it
	// (docs/UPGRADING.md).
	ManualUpgrade bool
	// UpgradeCheckInterval, default 5s: how often a leader whose active
	// cluster version is below its binary's highest asks the members
	// which versions they run (ManualUpgrade off). Shorter activates
	// sooner after the last member is upgraded, at one small RPC per
	// member per interval.
	UpgradeCheckInterval time.Duration

	// HistoryKeys bounds the keys whose recent grants this node keeps in
	// memory for GET /v1/locks/{key}/history (history.go); past it the
	// key whose last grant is oldest is forgotten. It also bounds the
	// queued waiters remembered for their wait time to 4×HistoryKeys.
	// Default DefaultHistoryKeys (4096); negative keeps no history.
	HistoryKeys int
	// HistoryEntries bounds the grants kept per key, oldest dropped
	// first. Default DefaultHistoryEntries (16), at most
	// MaxHistoryEntries.
	HistoryEntries int
	// ActivityWindow is how far back the per-second activity samples
	// (GET /v1/ui/activity) go: one fixed slot per second. Default
	// DefaultActivityWindow (5m), at most MaxActivityWindow.
	ActivityWindow time.Duration

	// FSM bounds what one command may do; zero fields take fsm defaults.
	// Every node of a cluster must use the same limits.
	FSM fsm.Config

	// Clock, default SystemClock.
	Clock Clock
	// Logger, default hclog.NewNullLogger().
	Logger hclog.Logger
	// TracerProvider makes the node's OpenTelemetry spans (docs/tracing.md):
	// children of a caller's recording span, and on the leader the spans
	// of commands a follower forwarded with their trace context. Nil (the
	// default): no spans, at no cost. An embedding program that uses
	// OpenTelemetry passes otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// wrapLogStore, when set (by tests), wraps the raft log store
	// beneath the node's own wrapper, to inject faults.
	wrapLogStore func(raft.LogStore) raft.LogStore
}

// DefaultConfig returns the defaults for every field that has one; ID and
// DataDir are left empty.
func DefaultConfig() Config {
	return Config{
		BindAddr:             "127.0.0.1:0",
		LogStore:             LogStoreWAL,
		HeartbeatTimeout:     300 * time.Millisecond,
		ElectionTimeout:      300 * time.Millisecond,
		LeaderLeaseTimeout:   250 * time.Millisecond,
		CommitTimeout:        defaultCommitTimeout(),
		MaxAppendEntries:     256,
		SnapshotThreshold:    8192,
		SnapshotInterval:     30 * time.Second,
		TrailingLogs:         10240,
		SnapshotRetain:       2,
		RaftIOTimeout:        2 * time.Second,
		DataFreeWarn:         DiskSpace{Percent: 5},
		TickInterval:         100 * time.Millisecond,
		MinTickGap:           2 * time.Millisecond,
		ClockSyncInterval:    time.Second,
		RetryTimeout:         3 * time.Second,
		CancelTimeout:        5 * time.Second,
		HistoryKeys:          DefaultHistoryKeys,
		HistoryEntries:       DefaultHistoryEntries,
		ActivityWindow:       DefaultActivityWindow,
		WaiterLease:          5 * time.Second,
		ReadyMaxLagEntries:   DefaultReadyMaxLagEntries,
		ReadyMaxLag:          DefaultReadyMaxLag,
		UpgradeCheckInterval: 5 * time.Second,
		FSM:                  fsm.DefaultConfig(),
		Clock:                SystemClock,
		Logger:               hclog.NewNullLogger(),
	}
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setS := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setS(&c.BindAddr, d.BindAddr)
	setS(&c.LogStore, d.LogStore)
	setD(&c.HeartbeatTimeout, d.HeartbeatTimeout)
	setD(&c.ElectionTimeout, d.ElectionTimeout)
	setD(&c.LeaderLeaseTimeout, d.LeaderLeaseTimeout)
	setD(&c.CommitTimeout, d.CommitTimeout)
	setD(&c.SnapshotInterval, d.SnapshotInterval)
	setD(&c.RaftIOTimeout, d.RaftIOTimeout)
	setD(&c.TickInterval, d.TickInterval)
	setD(&c.MinTickGap, d.MinTickGap)
	setD(&c.ClockSyncInterval, d.ClockSyncInterval)
	setD(&c.RetryTimeout, d.RetryTimeout)
	setD(&c.CancelTimeout, d.CancelTimeout)
	setD(&c.ActivityWindow, d.ActivityWindow)
	setD(&c.UpgradeCheckInterval, d.UpgradeCheckInterval)
	if c.HistoryKeys == 0 {
		c.HistoryKeys = d.HistoryKeys
	}
	if c.HistoryEntries == 0 {
		c.HistoryEntries = d.HistoryEntries
	}
	setD(&c.WaiterLease, d.WaiterLease)
	setD(&c.ReadyMaxLag, d.ReadyMaxLag)
	if c.ReadyMaxLagEntries == 0 {
		c.ReadyMaxLagEntries = d.ReadyMaxLagEntries
	}
	if c.MaxAppendEntries == 0 {
		c.MaxAppendEntries = d.MaxAppendEntries
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = d.SnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = d.TrailingLogs
	}
	if c.SnapshotRetain == 0 {
		c.SnapshotRetain = d.SnapshotRetain
	}
	if c.DataFreeWarn.IsZero() {
		c.DataFreeWarn = d.DataFreeWarn
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// Validate reports a Config that cannot work, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ID == "" {
		bad("ID is required")
	}
	if c.DataDir == "" {
		bad("DataDir is required")
	}
	if c.LogStore != LogStoreWAL && c.LogStore != LogStoreBolt {
		bad("LogStore must be %q or %q, not %q", LogStoreWAL, LogStoreBolt, c.LogStore)
	}
	if c.HeartbeatTimeout < 5*time.Millisecond || c.ElectionTimeout < c.HeartbeatTimeout {
		bad("need 5ms <= HeartbeatTimeout <= ElectionTimeout")
	}
	if c.LeaderLeaseTimeout < 5*time.Millisecond || c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("need 5ms <= LeaderLeaseTimeout <= HeartbeatTimeout")
	}
	if c.CommitTimeout < time.Millisecond {
		bad("CommitTimeout must be at least 1ms")
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		bad("MaxAppendEntries must be in [1, 1024]")
	}
	if c.SnapshotInterval < 5*time.Millisecond {
		bad("SnapshotInterval is too low")
	}
	if err := c.DataFreeWarn.validate(); err != nil {
		bad("DataFreeWarn: %v", err)
	}
	if c.SnapshotRetain < 1 {
		bad("SnapshotRetain must be at least 1")
	}
	if c.TickInterval < time.Millisecond || c.MinTickGap <= 0 || c.MinTickGap > c.TickInterval {
		bad("need 0 < MinTickGap <= TickInterval, TickInterval >= 1ms")
	}
	if c.UpgradeCheckInterval < time.Millisecond {
		bad("UpgradeCheckInterval must be at least 1ms")
	}
	if c.RetryTimeout < 0 || c.CancelTimeout <= 0 || c.RaftIOTimeout <= 0 {
		bad("RetryTimeout, CancelTimeout and RaftIOTimeout must be positive")
	}
	if c.WaiterLease > 0 && c.WaiterLease < 4*c.HeartbeatTimeout {
		bad("WaiterLease %v is under 4 heartbeat timeouts (%v): waiters would be cancelled during ordinary elections", c.WaiterLease, 4*c.HeartbeatTimeout)
	}
	if c.Bootstrap && len(c.Peers) > 0 {
		self := false
		seen := map[string]bool{}
		for _, p := range c.Peers {
			if p.ID == "" || p.Addr == "" {
				bad("peer %q: ID and Addr are required", p.ID)
			}
			if seen[p.ID] {
				bad("peer %q listed twice", p.ID)
			}
			seen[p.ID] = true
			self = self || p.ID == c.ID
		}
		if !self {
			bad("Peers must include this node (%q)", c.ID)
		}
	}
	if (c.PeerServerTLS == nil) != (c.PeerClientTLS == nil) {
		bad("PeerServerTLS and PeerClientTLS go together")
	}
	if c.PeerServerTLS != nil && c.PeerServerTLS.ClientAuth != tls.RequireAndVerifyClientCert {
		bad("PeerServerTLS must require and verify client certificates")
	}
	if c.HistoryEntries < 1 || c.HistoryEntries > MaxHistoryEntries {
		bad("HistoryEntries must be in [1, %d], not %d", MaxHistoryEntries, c.HistoryEntries)
	}
	if c.ActivityWindow < time.Second || c.ActivityWindow > MaxActivityWindow {
		bad("ActivityWindow must be in [1s, %v], not %v", MaxActivityWindow, c.ActivityWindow)
	}
	if c.ReadyMaxLag < 0 {
		bad("ReadyMaxLag must not be negative")
	}
	if c.Bootstrap && len(c.Join) > 0 {
		bad("Bootstrap and Join are exclusive")
	}
	if c.PeerHandshakeTimeout < 0 || c.PeerMaxConns < 0 {
		bad("PeerHandshakeTimeout and PeerMaxConns must not be negative")
	}
	// fsm.New completes a partly filled fsm.Config; check the result.
	if err := fsm.New(c.FSM).Config().Validate(); err != nil {
		bad("FSM: %v", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}
