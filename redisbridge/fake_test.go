package redisbridge

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

// fakeBackend is a Backend with the real lock semantics and table: the
// lock service over one in-process table (cluster.Local), whose Apply
// goes through the command codec as an entry of the log would, with the
// wall clock as the cluster clock and a tick loop doing the leader's
// expiries. What a cluster adds is injected: no reachable leader
// (noLeader) and commits answered late (asyncDelays).
type fakeBackend struct {
	*cluster.Local
	asyncSeq    atomic.Int64
	asyncDelays atomic.Bool // ApplyAsync's futures complete late
	noLeader    atomic.Bool // every call that needs the leader fails with api.ErrNoLeader
}

func newFakeBackend(tb testing.TB) *fakeBackend {
	f, stop := newFake()
	tb.Cleanup(stop)
	return f
}

// newFake returns a running fake; stop ends its tick loop.
func newFake() (*fakeBackend, func()) {
	l, err := cluster.NewLocal(cluster.LocalConfig{ID: "fake", TickInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err) // the defaults are valid
	}
	return &fakeBackend{Local: l}, func() { _ = l.Close() }
}

// leaderless is the error of every call while noLeader is set.
func (f *fakeBackend) leaderless() error {
	if f.noLeader.Load() {
		return fmt.Errorf("fake: %w", api.ErrNoLeader)
	}
	return nil
}

func (f *fakeBackend) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	if err := f.leaderless(); err != nil {
		return fsm.Result{}, err
	}
	return f.Local.Apply(ctx, cmd)
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
	if !stale {
		if err := f.leaderless(); err != nil {
			return err
		}
	}
	return f.Local.Read(ctx, stale, fn)
}

// The lock API calls the bridge makes fail as Apply does without a
// leader; the rest is the Local's.

func (f *fakeBackend) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	if err := f.leaderless(); err != nil {
		return api.Lease{}, err
	}
	return f.Local.Acquire(ctx, req)
}

func (f *fakeBackend) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	if err := f.leaderless(); err != nil {
		return api.Lease{}, err
	}
	return f.Local.TryAcquire(ctx, req)
}

func (f *fakeBackend) Release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	if err := f.leaderless(); err != nil {
		return api.ReleaseResult{}, err
	}
	return f.Local.Release(ctx, req)
}

func (f *fakeBackend) Extend(ctx context.Context, req api.ExtendRequest) (api.Lease, error) {
	if err := f.leaderless(); err != nil {
		return api.Lease{}, err
	}
	return f.Local.Extend(ctx, req)
}

func (f *fakeBackend) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	if err := f.leaderless(); err != nil && !opts.Stale {
		return api.LockInfo{}, err
	}
	return f.Local.Inspect(ctx, key, opts)
}

func (f *fakeBackend) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	if err := f.leaderless(); err != nil {
		return api.FenceResult{}, err
	}
	return f.Local.FenceCheck(ctx, resource, token)
}

var _ Backend = (*fakeBackend)(nil)
