package redisbridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// fakeBackend implements Backend over one in-process fsm.Table: a mutex
// instead of raft, a monotonic index, the wall clock (ms since start) as
// the command time, and a ticker goroutine that proposes Ticks when
// something falls due, like the leader does. Commands go through the
// binary codec as they would through the log.
type fakeBackend struct {
	mu          sync.Mutex
	t           *fsm.Table
	index       uint64
	start       time.Time
	subs        map[int]func(uint64, []fsm.Event)
	nextSub     int
	waiters     map[string]chan fsm.Event
	reqSeq      atomic.Int64
	asyncSeq    atomic.Int64
	asyncDelays atomic.Bool // ApplyAsync's futures complete late

	noLeader atomic.Bool // every call fails with api.ErrNoLeader
	applies  atomic.Int64
	reads    atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func newFakeBackend(tb testing.TB) *fakeBackend {
	f, stop := newFake()
	tb.Cleanup(stop)
	return f
}

// newFake returns a running fake; stop ends its ticker.
func newFake() (*fakeBackend, func()) {
	f := &fakeBackend{
		t:       fsm.New(fsm.Config{}),
		start:   time.Now(),
		subs:    map[int]func(uint64, []fsm.Event){},
		waiters: map[string]chan fsm.Event{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	// Ends when stop closes f.stop.
	go f.ticker()
	return f, func() {
		close(f.stop)
		<-f.done
	}
}

func (f *fakeBackend) now() int64 { return time.Since(f.start).Milliseconds() + 1 }

func (f *fakeBackend) ticker() {
	defer close(f.done)
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tk.C:
		}
		f.mu.Lock()
		at, ok := f.t.NextDeadline()
		f.mu.Unlock()
		if ok && at <= f.now() {
			f.apply(&fsm.Command{Op: fsm.OpTick})
		}
	}
}

func (f *fakeBackend) apply(cmd *fsm.Command) fsm.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *cmd
	c.Time = f.now()
	b, err := c.MarshalBinary()
	if err != nil {
		panic(err)
	}
	f.index++
	r := f.t.ApplyBytes(f.index, b)
	for _, fn := range f.subs {
		fn(f.index, r.Events)
	}
	for _, ev := range r.Events {
		if ch := f.waiters[ev.WaiterID]; ev.WaiterID != "" && ch != nil && (ev.Kind == fsm.EvGranted || ev.Kind == fsm.EvWaitEnded) {
			select {
			case ch <- ev:
			default:
			}
		}
	}
	return r
}

func (f *fakeBackend) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	if f.noLeader.Load() {
		return fsm.Result{}, fmt.Errorf("fake: %w", api.ErrNoLeader)
	}
	if err := ctx.Err(); err != nil {
		return fsm.Result{}, err
	}
	f.applies.Add(1)
	return f.apply(cmd), nil
}

// ApplyAsync applies cmd at once, in call order, like Apply. With
// asyncDelays its future reports done a little later (0-200µs, varying),
// so replies wait for commits as they do over raft; else at once.
func (f *fakeBackend) ApplyAsync(ctx context.Context, cmd *fsm.Command) fsm.Future {
	fut := &fakeFuture{done: make(chan struct{})}
	fut.res, fut.err = f.Apply(ctx, cmd)
	if !f.asyncDelays.Load() {
		close(fut.done)
		return fut
	}
	delay := time.Duration(f.asyncSeq.Add(1)%5) * 50 * time.Microsecond
	time.AfterFunc(delay, func() { close(fut.done) })
	return fut
}

type fakeFuture struct {
	done chan struct{}
	res  fsm.Result
	err  error
}

func (f *fakeFuture) Done() <-chan struct{} { return f.done }

func (f *fakeFuture) Result() (fsm.Result, error) {
	<-f.done
	return f.res, f.err
}

func (f *fakeBackend) Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error {
	if f.noLeader.Load() && !stale {
		return fmt.Errorf("fake: %w", api.ErrNoLeader)
	}
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.t, f.now())
	return nil
}

func (f *fakeBackend) Subscribe(fn func(uint64, []fsm.Event)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextSub
	f.nextSub++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

func (f *fakeBackend) WaitCommitted(ctx context.Context, index uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index > f.index {
		return errors.New("fake: index not yet applied")
	}
	return nil
}

// apiErr maps FSM refusals to the api sentinels, as cluster does.
func apiErr(err error) error {
	table := []struct{ f, a error }{
		{fsm.ErrLocked, api.ErrLocked}, {fsm.ErrNotOwner, api.ErrNotOwner}, {fsm.ErrNotHeld, api.ErrNotHeld},
		{fsm.ErrNoSuchKey, api.ErrNotFound}, {fsm.ErrWaitTimeout, api.ErrWaitTimeout}, {fsm.ErrCancelled, api.ErrCancelled},
		{fsm.ErrPermits, api.ErrConflict}, {fsm.ErrSessionUnknown, api.ErrSessionExpired}, {fsm.ErrLimit, api.ErrLimit},
		{fsm.ErrBadTTL, api.ErrBadRequest}, {fsm.ErrStaleFence, api.ErrStaleFence}, {fsm.ErrLockDelay, api.ErrLockDelay},
		{fsm.ErrWrongType, api.ErrConflict}, {fsm.ErrBadCommand, api.ErrBadRequest},
	}
	for _, row := range table {
		if errors.Is(err, row.f) {
			return fmt.Errorf("%w: %w", row.a, err)
		}
	}
	return err
}

func acquireCmd(req api.AcquireRequest) (*fsm.Command, error) {
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return nil, err
	}
	mode, ok := fsm.ParseMode(req.Mode)
	if !ok {
		return nil, api.ErrBadRequest
	}
	return &fsm.Command{Op: fsm.OpAcquire, ReqID: req.RequestID, Key: req.Key, Keys: req.Keys, Owner: req.Owner,
		Mode: mode, Permits: req.Permits, TTL: req.TTLMs, Reentrant: req.Reentrant, Session: req.Session,
		LockDelay: req.LockDelay, MaxHold: req.MaxHoldMs, Meta: fsm.MetaOf(req.Meta)}, nil
}

func leaseOf(req api.AcquireRequest, r fsm.Result, now int64) api.Lease {
	return api.Lease{Key: req.Key, Owner: req.Owner, Fence: r.Fence, TTLMs: r.Deadline - now, Count: r.Count, Deadline: r.Deadline}
}

func (f *fakeBackend) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	cmd, err := acquireCmd(req)
	if err != nil {
		return api.Lease{}, err
	}
	r, err := f.Apply(ctx, cmd)
	if err != nil {
		return api.Lease{}, err
	}
	if r.Err != nil {
		return api.Lease{}, apiErr(r.Err)
	}
	return leaseOf(req, r, f.now()), nil
}

func (f *fakeBackend) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	cmd, err := acquireCmd(req)
	if err != nil {
		return api.Lease{}, err
	}
	cmd.Wait = req.WaitMs
	if cmd.Wait == 0 {
		cmd.Wait = api.MaxWait.Milliseconds()
	}
	if cmd.ReqID == "" {
		cmd.ReqID = "fake-" + strconv.FormatInt(f.reqSeq.Add(1), 10)
	}
	ch := make(chan fsm.Event, 1)
	f.mu.Lock()
	f.waiters[cmd.ReqID] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.waiters, cmd.ReqID)
		f.mu.Unlock()
	}()
	r, err := f.Apply(ctx, cmd)
	if err != nil {
		return api.Lease{}, err
	}
	if r.Err != nil {
		return api.Lease{}, apiErr(r.Err)
	}
	if r.Granted {
		return leaseOf(req, r, f.now()), nil
	}
	select {
	case ev := <-ch:
		if ev.Kind == fsm.EvGranted {
			return api.Lease{Key: req.Key, Owner: req.Owner, Fence: ev.Fence, Deadline: ev.Deadline, Count: ev.Count,
				TTLMs: ev.Deadline - f.now()}, nil
		}
		return api.Lease{}, apiErr(ev.Err)
	case <-ctx.Done():
		f.apply(&fsm.Command{Op: fsm.OpCancelWait, ReqID: cmd.ReqID})
		return api.Lease{}, fmt.Errorf("%w: %w", api.ErrCancelled, ctx.Err())
	}
}

func (f *fakeBackend) Release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return api.ReleaseResult{}, err
	}
	r, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpRelease, ReqID: req.RequestID, Key: req.Key, Owner: req.Owner,
		Reentrant: req.Reentrant, Force: req.Force})
	if err != nil {
		return api.ReleaseResult{}, err
	}
	if r.Err != nil {
		return api.ReleaseResult{}, apiErr(r.Err)
	}
	return api.ReleaseResult{Released: r.Released, Count: r.Count}, nil
}

func (f *fakeBackend) Extend(ctx context.Context, req api.ExtendRequest) (api.Lease, error) {
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return api.Lease{}, err
	}
	r, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpExtend, ReqID: req.RequestID, Key: req.Key, Owner: req.Owner, TTL: req.TTLMs})
	if err != nil {
		return api.Lease{}, err
	}
	if r.Err != nil {
		return api.Lease{}, apiErr(r.Err)
	}
	return api.Lease{Key: req.Key, Owner: req.Owner, Fence: r.Fence, Deadline: r.Deadline, TTLMs: r.Deadline - f.now()}, nil
}

func (f *fakeBackend) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	var info api.LockInfo
	var ierr error
	err := f.Read(ctx, opts.Stale, func(t *fsm.Table, now int64) {
		li, err := t.Inspect(key, now)
		if err != nil {
			ierr = apiErr(err)
			return
		}
		info = api.LockInfo{Key: li.Key, Kind: kindName(li.Kind), Permits: li.Permits, Fence: li.Fence, TTLMs: -1,
			AppliedIndex: t.AppliedIndex()}
		if li.Deadline != 0 {
			info.TTLMs = li.Deadline - now
		}
		for _, h := range li.Holders {
			info.Holders = append(info.Holders, api.Holder{Owner: h.Owner, Mode: h.Mode.String(), Count: h.Count,
				Fence: h.Fence, TTLMs: h.Deadline - now, Session: h.Session, Deadline: h.Deadline,
				Meta: h.Meta.Map(), GrantedMs: h.Granted, ExtendedMs: h.Extended})
		}
		for _, w := range li.Waiters {
			info.Waiters = append(info.Waiters, api.Waiter{ID: w.ID, Owner: w.Owner, Mode: w.Mode.String(),
				Keys: w.Keys, WaitMs: w.Deadline - now, Meta: w.Meta.Map(), QueuedMs: w.Queued})
		}
	})
	if err != nil {
		return api.LockInfo{}, err
	}
	return info, ierr
}

func kindName(k fsm.Kind) string {
	return map[fsm.Kind]string{fsm.KindLock: "lock", fsm.KindString: "string", fsm.KindHash: "hash",
		fsm.KindSet: "set", fsm.KindZSet: "zset", fsm.KindList: "list"}[k]
}

func (f *fakeBackend) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	r, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpFenceCheck, Key: resource, Token: token})
	if err != nil {
		return api.FenceResult{}, err
	}
	switch {
	case r.Err == nil:
		return api.FenceResult{OK: true, Highest: r.Fence}, nil
	case errors.Is(r.Err, fsm.ErrStaleFence):
		return api.FenceResult{OK: false, Highest: r.Fence}, nil
	}
	return api.FenceResult{}, apiErr(r.Err)
}

func (f *fakeBackend) Status(ctx context.Context) (api.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.t.Stats()
	return api.Status{ID: "fake", Leader: "fake", State: "Leader", Term: 1, AppliedIndex: f.index, CommitIndex: f.index,
		Locks: st.Locks, Keys: st.Keys, Waiters: st.Waiters, Sessions: st.Sessions,
		KeyspaceBytes: st.Memory, KeyspaceMaxBytes: max(f.t.Config().MaxMemory, 0)}, nil
}

var errFakeUnsupported = errors.New("fake: not supported by the test double")

func (f *fakeBackend) List(context.Context, api.ListRequest) (api.ListResult, error) {
	return api.ListResult{}, errFakeUnsupported
}
func (f *fakeBackend) OpenSession(context.Context, time.Duration) (api.SessionInfo, error) {
	return api.SessionInfo{}, errFakeUnsupported
}
func (f *fakeBackend) KeepAlive(context.Context, string) (api.SessionInfo, error) {
	return api.SessionInfo{}, errFakeUnsupported
}
func (f *fakeBackend) CloseSession(context.Context, string) error { return errFakeUnsupported }
func (f *fakeBackend) Campaign(context.Context, api.CampaignRequest) (api.Leader, error) {
	return api.Leader{}, errFakeUnsupported
}
func (f *fakeBackend) Resign(context.Context, api.Leader) error { return errFakeUnsupported }
func (f *fakeBackend) Proclaim(context.Context, api.Leader, string) (api.Leader, error) {
	return api.Leader{}, errFakeUnsupported
}
func (f *fakeBackend) Observe(context.Context, string) (<-chan api.Leader, error) {
	return nil, errFakeUnsupported
}

var _ Backend = (*fakeBackend)(nil)
