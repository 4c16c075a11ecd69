package lockservice

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// LocalConfig configures a Local. Zero fields take the defaults noted on
// each field.
type LocalConfig struct {
	// ID names the replica in Status; default "local".
	ID string
	// FSM holds the table's limits; zero fields take fsm's defaults.
	FSM fsm.Config
	// Clock stamps commands, default SystemClock. The table's time starts
	// at the clock's Unix milliseconds and moves with its monotonic
	// reading, as a leader's does. A test clock that moves in jumps
	// should be followed by an Apply of an fsm.OpTick, which expires what
	// fell due at once instead of at the loop's next look.
	Clock Clock
	// TickInterval, default 100ms: the loop that expires leases, grants
	// waiters and ends sessions looks at least this often; it also wakes
	// at the table's next deadline and after every applied command.
	TickInterval time.Duration
	// CancelTimeout, default 5s: as Config.CancelTimeout.
	CancelTimeout time.Duration
	// Logger, default a null logger.
	Logger hclog.Logger
}

func (c LocalConfig) withDefaults() LocalConfig {
	if c.ID == "" {
		c.ID = "local"
	}
	if c.Clock == nil {
		c.Clock = SystemClock
	}
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.CancelTimeout == 0 {
		c.CancelTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Validate reports a LocalConfig that cannot work, after defaults are
// applied.
func (c LocalConfig) Validate() error {
	c = c.withDefaults()
	if c.TickInterval < time.Millisecond {
		return fmt.Errorf("%w: TickInterval must be at least 1ms, not %v", ErrConfig, c.TickInterval)
	}
	if c.CancelTimeout < 0 {
		return fmt.Errorf("%w: CancelTimeout must not be negative", ErrConfig)
	}
	// fsm.New completes a partly filled fsm.Config; check the result.
	if err := fsm.New(c.FSM).Config().Validate(); err != nil {
		return fmt.Errorf("%w: FSM: %w", ErrConfig, err)
	}
	return nil
}

// Local is the lock service over a single in-process table: the same
// lock semantics as a Node (api.Locker, elections, and the RESP bridge's
// Backend: Apply, Read, Subscribe, WaitCommitted), with a mutex in place
// of raft. Commands are encoded and decoded as they would be through the
// log, stamped with LocalConfig.Clock, and a loop does the leader's tick
// work (expiries, waiter grants, session ends).
//
// Local is for tests and single-process use: nothing is written to disk
// and nothing is replicated, so every lock, session and fence is lost
// with the process. Create it with NewLocal; stop it with Close.
type Local struct {
	*Service

	cfg   LocalConfig
	clock Clock
	t0    int64     // the table's time when the clock read m0
	m0    time.Time // the clock's reading at NewLocal

	// applyMu orders applies: an entry's events reach waiters and
	// subscribers before the next entry is applied. mu guards table:
	// applies take it for writing, reads for reading. The table counts
	// the entries applied; each command is the next index.
	applyMu sync.Mutex
	mu      sync.RWMutex
	table   *fsm.Table
	limits  api.Limits

	appliedMu sync.Mutex
	applied   uint64
	appliedCh chan struct{} // closed and replaced whenever applied grows

	hub    *Hub
	reqSeq atomic.Uint64
	// keyspace: WantKeyspaceEvents' callers (keyspace_events.go).
	keyspace KeyspaceDemand

	kick      chan struct{}
	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup
}

// NewLocal returns a running Local with an empty table.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := fsm.New(cfg.FSM)
	m0 := cfg.Clock.Now()
	l := &Local{
		cfg:       cfg,
		clock:     cfg.Clock,
		t0:        m0.UnixMilli(),
		m0:        m0,
		table:     t,
		limits:    LimitsOf(t.Config()),
		appliedCh: make(chan struct{}),
		hub:       NewHub(),
		kick:      make(chan struct{}, 1),
		closed:    make(chan struct{}),
	}
	l.Service = New(localReplica{l}, cfg.Logger.Named("local"), cfg.CancelTimeout, false)
	l.wg.Add(1)
	// Ends when the Local closes.
	go func() {
		defer l.wg.Done()
		l.tickLoop()
	}()
	return l, nil
}

// Close stops the tick loop; blocked requests return ErrClosed. The
// table is dropped with the Local.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.wg.Wait()
	})
	return nil
}

// now is the cluster clock: the table's start time plus the clock's
// monotonic progress since.
func (l *Local) now() int64 {
	return l.t0 + l.clock.Now().Sub(l.m0).Milliseconds()
}

// Apply stamps cmd with the clock and applies it to the table, through
// the command codec as an entry of the log would be; cmd is not
// modified. FSM refusals are in Result.Err, not the error. The error is
// ctx's when it has ended, ErrClosed after Close.
func (l *Local) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	if err := ctx.Err(); err != nil {
		return fsm.Result{}, err
	}
	select {
	case <-l.closed:
		return fsm.Result{}, ErrClosed
	default:
	}
	c := *cmd
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	l.mu.Lock()
	// The table's time never moves back, whatever the clock does.
	c.Time = max(l.now(), l.table.Now())
	idx := l.table.AppliedIndex() + 1
	l.table.SetKeyspaceEvents(l.keyspace.On())
	r := l.table.ApplyBytes(idx, c.AppendBinary(make([]byte, 0, EncodedSizeHint(&c))))
	l.mu.Unlock()
	if len(r.Events) > 0 {
		l.hub.Dispatch(idx, r.Events)
	}
	l.appliedMu.Lock()
	l.applied = idx
	close(l.appliedCh)
	l.appliedCh = make(chan struct{})
	l.appliedMu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return r, nil
}

// Read runs fn against the table under its read lock, at the clock's
// time (never before the table's). Every read is linearizable here, so
// stale changes nothing. fn must not block, keep t, or mutate it.
func (l *Local) Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	fn(l.table, ReadTime(l.table, l.now()))
	return nil
}

// Subscribe calls fn with every applied entry's events (entries without
// events are skipped), in log order, on the apply path: fn must not
// block or apply. cancel stops the calls.
func (l *Local) Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func()) {
	return l.hub.Subscribe(fn)
}

// AppliedIndex returns the index of the last applied command.
func (l *Local) AppliedIndex() uint64 {
	idx, _ := l.Applied()
	return idx
}

// Applied returns the index of the last applied command and a channel
// closed when the next one is applied: a way to wait for a change
// without polling.
func (l *Local) Applied() (index uint64, next <-chan struct{}) {
	l.appliedMu.Lock()
	defer l.appliedMu.Unlock()
	return l.applied, l.appliedCh
}

// WaitCommitted blocks until index is applied (a command is committed
// when it is applied here), ctx ends or the Local closes.
func (l *Local) WaitCommitted(ctx context.Context, index uint64) error {
	return WaitIndex(ctx, index, l.Applied, l.closed)
}

// Status describes the Local as a one-member cluster it leads.
func (l *Local) Status(ctx context.Context) (api.Status, error) {
	if err := ctx.Err(); err != nil {
		return api.Status{}, err
	}
	idx := l.AppliedIndex()
	st := api.Status{
		ID: l.cfg.ID, Leader: l.cfg.ID, LeaderAddr: "local", State: "leader", Term: 1,
		AppliedIndex: idx, CommitIndex: idx,
		Members: []api.Member{{ID: l.cfg.ID, Address: "local", Suffrage: "voter", Leader: true}},
	}
	l.mu.RLock()
	stats := l.table.Stats()
	st.FSMTimeMs = l.table.Now()
	st.KeyspaceMaxBytes = max(l.table.Config().MaxMemory, 0)
	st.ClusterVersion = l.table.Version()
	l.mu.RUnlock()
	// As cluster.VersionRange prints the versions this binary runs.
	st.ClusterVersions = fmt.Sprintf("%d..%d", fsm.MinClusterVersion, fsm.MaxClusterVersion)
	st.Locks, st.Keys, st.Waiters, st.Sessions = stats.Locks, stats.Keys, stats.Waiters, stats.Sessions
	st.KeyspaceBytes = stats.Memory
	return st, nil
}

// tickLoop applies a Tick whenever something in the table falls due, as
// a leader's tick loop does (Node.tickLoop): expiries, waiter grants and
// session ends happen without client traffic. It ends at Close.
func (l *Local) tickLoop() {
	timer := time.NewTimer(l.cfg.TickInterval)
	defer timer.Stop()
	for {
		l.mu.RLock()
		at, ok := l.table.NextDeadline()
		l.mu.RUnlock()
		wait := l.cfg.TickInterval
		if ok {
			if d := time.Duration(at-l.now()) * time.Millisecond; d <= 0 {
				if _, err := l.Apply(context.Background(), &fsm.Command{Op: fsm.OpTick}); err != nil {
					return // closed
				}
				// The Tick applied everything due, so the next deadline is
				// later; its own kick is no news.
				select {
				case <-l.kick:
				default:
				}
				wait = time.Millisecond
			} else {
				wait = min(wait, d)
			}
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-timer.C:
		case <-l.kick:
			timer.Stop()
		case <-l.closed:
			return
		}
	}
}

// localReplica is a Local as the lock service's replica; the methods
// of Replica that are not the Local's own are here, off its API.
type localReplica struct{ *Local }

var _ Replica = localReplica{}

func (l localReplica) AwaitWaiter(id string) <-chan WaiterEvent { return l.hub.AwaitWaiter(id) }
func (l localReplica) StopWaiter(id string)                     { l.hub.StopWaiter(id) }
func (l localReplica) CommitDemand() (done func())              { return l.hub.CommitDemand() }
func (l localReplica) KeyWatches() *KeyWatches                  { return l.hub.KeyWatches() }
func (l localReplica) RequestLimits() api.Limits                { return l.limits }
func (l localReplica) Closing() <-chan struct{}                 { return l.closed }
func (l localReplica) ObserveWait(float64)                      {}

func (l localReplica) NewReqID() string {
	return l.cfg.ID + "-" + strconv.FormatUint(l.reqSeq.Add(1), 10)
}

// One table has no log writes to share: nothing to hold back.
func (l localReplica) DeferQueuedAcquire(context.Context, *fsm.Command) {}
func (l localReplica) OpenHandoff(*fsm.Command)                         {}

// WriteSnapshot writes the table to w in the fsm snapshot format, as
// Node.WriteSnapshot does (httpapi's Snapshotter). The table is encoded
// into memory under the read lock; start is called with its applied
// index before the first byte goes to w. Cancelling ctx stops the
// writing.
func (l *Local) WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf bytes.Buffer
	l.mu.RLock()
	err := l.table.Snapshot(&buf)
	idx := l.table.AppliedIndex()
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	if start != nil {
		start(idx)
	}
	if _, err := buf.WriteTo(ContextWriter{ctx, w}); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	return nil
}
