package httpapitest

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
)

// Fake is an api.Locker with the lock semantics of a real node: it is the
// lock service over one in-process table (lockservice.Local), wrapped with
// test hooks (injected failures, call and request-id records, member
// lists). Leases, FIFO waiters, sessions, elections and exactly-once
// request ids behave as on a cluster; time is the wall clock. It is safe
// for concurrent use.
type Fake struct {
	l *lockservice.Local

	mu      sync.Mutex
	seen    []string // request ids in arrival order, repeats included
	calls   map[string]int
	failErr error
	members []api.Member
}

var _ api.Locker = (*Fake)(nil)

// fakeID is the Fake's member id and address in Status.
const fakeID = "fake"

// NewFake returns an empty Fake. Close stops its tick loop; a Fake
// nobody closes stops it when it is garbage collected.
func NewFake() *Fake {
	l, err := lockservice.NewLocal(lockservice.LocalConfig{ID: fakeID, TickInterval: 10 * time.Millisecond})
	if err != nil {
		panic(fmt.Sprintf("httpapitest: %v", err)) // the defaults are valid
	}
	f := &Fake{l: l, calls: map[string]int{}}
	runtime.AddCleanup(f, func(l *lockservice.Local) { _ = l.Close() }, l)
	return f
}

// Close stops the Fake: blocked calls return, later ones fail.
func (f *Fake) Close() error { return f.l.Close() }

// Local returns the lock service the Fake wraps, for tests that need its
// Backend side (Apply, Read, Subscribe) or want to bypass the hooks.
func (f *Fake) Local() *lockservice.Local { return f.l }

// Fail makes every call return err (wrapped) until Fail(nil).
func (f *Fake) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failErr = err
}

// RequestIDs returns every request id received, in order, repeats included.
func (f *Fake) RequestIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// Calls returns how many times the named method ("Acquire", "Extend", ...)
// was called.
func (f *Fake) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// Waiters returns how many acquires are queued right now.
func (f *Fake) Waiters() int {
	st, err := f.l.Status(context.Background())
	if err != nil {
		return 0
	}
	return st.Waiters
}

// Holder returns the owner and fence of key's hold (the first owner in
// sorted order when there are several), and whether key is held.
func (f *Fake) Holder(key string) (owner string, fence uint64, ok bool) {
	info, err := f.l.Inspect(context.Background(), key, api.ReadOptions{})
	if err != nil || len(info.Holders) == 0 {
		return "", 0, false
	}
	hs := append([]api.Holder(nil), info.Holders...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].Owner < hs[j].Owner })
	return hs[0].Owner, hs[0].Fence, true
}

// Changed returns a channel closed when the next command is applied
// (any change of state, and some that change nothing: re-check).
func (f *Fake) Changed() <-chan struct{} {
	_, next := f.l.Applied()
	return next
}

// ExpireSession ends a session now, as its TTL passing would: its holds
// are released and its waiters removed.
func (f *Fake) ExpireSession(id string) {
	_ = f.l.CloseSession(context.Background(), id)
}

// begin counts a call and returns the injected failure, if any.
func (f *Fake) begin(method, reqID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if reqID != "" {
		f.seen = append(f.seen, reqID)
	}
	if f.failErr != nil {
		return fmt.Errorf("fake %s: %w", method, f.failErr)
	}
	return nil
}

// Acquire implements api.Locker.
func (f *Fake) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	if err := f.begin("Acquire", req.RequestID); err != nil {
		return api.Lease{}, err
	}
	return f.l.Acquire(ctx, req)
}

// TryAcquire implements api.Locker.
func (f *Fake) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	if err := f.begin("TryAcquire", req.RequestID); err != nil {
		return api.Lease{}, err
	}
	return f.l.TryAcquire(ctx, req)
}

// Release implements api.Locker.
func (f *Fake) Release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	if err := f.begin("Release", req.RequestID); err != nil {
		return api.ReleaseResult{}, err
	}
	return f.l.Release(ctx, req)
}

// Extend implements api.Locker.
func (f *Fake) Extend(ctx context.Context, req api.ExtendRequest) (api.Lease, error) {
	if err := f.begin("Extend", req.RequestID); err != nil {
		return api.Lease{}, err
	}
	return f.l.Extend(ctx, req)
}

// Inspect implements api.Locker.
func (f *Fake) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	if err := f.begin("Inspect", ""); err != nil {
		return api.LockInfo{}, err
	}
	return f.l.Inspect(ctx, key, opts)
}

// List implements api.Locker.
func (f *Fake) List(ctx context.Context, req api.ListRequest) (api.ListResult, error) {
	if err := f.begin("List", ""); err != nil {
		return api.ListResult{}, err
	}
	return f.l.List(ctx, req)
}

// OpenSession implements api.Locker.
func (f *Fake) OpenSession(ctx context.Context, ttl time.Duration) (api.SessionInfo, error) {
	if err := f.begin("OpenSession", ""); err != nil {
		return api.SessionInfo{}, err
	}
	return f.l.OpenSession(ctx, ttl)
}

// KeepAlive implements api.Locker.
func (f *Fake) KeepAlive(ctx context.Context, id string) (api.SessionInfo, error) {
	if err := f.begin("KeepAlive", ""); err != nil {
		return api.SessionInfo{}, err
	}
	return f.l.KeepAlive(ctx, id)
}

// CloseSession implements api.Locker.
func (f *Fake) CloseSession(ctx context.Context, id string) error {
	if err := f.begin("CloseSession", ""); err != nil {
		return err
	}
	return f.l.CloseSession(ctx, id)
}

// FenceCheck implements api.Locker.
func (f *Fake) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	if err := f.begin("FenceCheck", ""); err != nil {
		return api.FenceResult{}, err
	}
	return f.l.FenceCheck(ctx, resource, token)
}

// Campaign implements api.Locker.
func (f *Fake) Campaign(ctx context.Context, req api.CampaignRequest) (api.Leader, error) {
	if err := f.begin("Campaign", ""); err != nil {
		return api.Leader{}, err
	}
	return f.l.Campaign(ctx, req)
}

// Resign implements api.Locker.
func (f *Fake) Resign(ctx context.Context, ld api.Leader) error {
	if err := f.begin("Resign", ""); err != nil {
		return err
	}
	return f.l.Resign(ctx, ld)
}

// Proclaim implements api.Locker.
func (f *Fake) Proclaim(ctx context.Context, ld api.Leader, value string) (api.Leader, error) {
	if err := f.begin("Proclaim", ""); err != nil {
		return api.Leader{}, err
	}
	return f.l.Proclaim(ctx, ld, value)
}

// Observe implements api.Locker.
func (f *Fake) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	if err := f.begin("Observe", ""); err != nil {
		return nil, err
	}
	return f.l.Observe(ctx, election)
}

// Status implements api.Locker: the Local's, with the members AddVoter
// added.
func (f *Fake) Status(ctx context.Context) (api.Status, error) {
	if err := f.begin("Status", ""); err != nil {
		return api.Status{}, err
	}
	st, err := f.l.Status(ctx)
	if err != nil {
		return api.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st.LeaderAddr = fakeID
	st.Members = append([]api.Member{{ID: fakeID, Address: fakeID, Suffrage: "voter", Leader: true}}, f.members...)
	return st, nil
}

// AddVoter implements httpapi.Membership: it adds a member to Status.
func (f *Fake) AddVoter(ctx context.Context, id, addr string) error {
	if err := f.begin("AddVoter", ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.ID == id {
			if m.Address == addr {
				return nil
			}
			return fmt.Errorf("%w: %s is at %s", api.ErrConflict, id, m.Address)
		}
	}
	f.members = append(f.members, api.Member{ID: id, Address: addr, Suffrage: "voter"})
	return nil
}

// RemoveServer implements httpapi.Membership.
func (f *Fake) RemoveServer(ctx context.Context, id string) error {
	if err := f.begin("RemoveServer", ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members {
		if m.ID == id {
			f.members = append(f.members[:i], f.members[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: member %s", api.ErrNotFound, id)
}

// KeyIndex, PrefixIndex, WaitKeyChange and WaitPrefixChange serve
// blocking queries (httpapi.ChangeWaiter) from the Local's change indexes.
func (f *Fake) KeyIndex(key string) uint64 { return f.l.KeyIndex(key) }

// PrefixIndex: see KeyIndex.
func (f *Fake) PrefixIndex(prefix string) uint64 { return f.l.PrefixIndex(prefix) }

// WaitKeyChange: see KeyIndex.
func (f *Fake) WaitKeyChange(ctx context.Context, key string, index uint64) (uint64, error) {
	return f.l.WaitKeyChange(ctx, key, index)
}

// WaitPrefixChange: see KeyIndex.
func (f *Fake) WaitPrefixChange(ctx context.Context, prefix string, index uint64) (uint64, error) {
	return f.l.WaitPrefixChange(ctx, prefix, index)
}
