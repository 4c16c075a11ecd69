package httpapitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
)

// Fake is an in-memory api.Locker. Leases end by wall clock (time.Now) at
// grant/extend time + TTL, exactly like a server enforcing them. Waiters
// are served in arrival order. Requests carrying a RequestID are
// exactly-once: a repeat returns the first final answer. It is safe for
// concurrent use.
type Fake struct {
	mu              sync.Mutex
	changed         chan struct{} // closed (and replaced) on every state change
	locks           map[string]*fakeLock
	waiters         []*fakeWaiter // global arrival order
	sessions        map[string]*fakeSession
	fences          map[string]uint64
	elections       map[string]api.Leader
	electionSession map[string]string // election -> the leader's session
	index           uint64            // grant counter: fences come from here
	nextID          int

	results  map[string]fakeResult // request id -> first final answer
	inflight map[string]*fakeWaiter
	seen     []string // request ids in arrival order, repeats included
	calls    map[string]int
	failErr  error
	members  []api.Member
}

type fakeLock struct {
	mode    string
	permits int
	holds   map[string]*fakeHold // by owner
}

type fakeHold struct {
	mode     string
	count    int
	fence    uint64
	ttl      time.Duration
	deadline time.Time
	session  string
	meta     map[string]string
	granted  time.Time
	extended time.Time
}

type fakeWaiter struct {
	req    api.AcquireRequest
	keys   []string
	id     string
	queued time.Time
	done   chan struct{}
	result fakeResult
}

type fakeSession struct {
	ttl      time.Duration
	deadline time.Time
}

type fakeResult struct {
	lease   api.Lease
	release api.ReleaseResult
	err     error
}

var _ api.Locker = (*Fake)(nil)

// NewFake returns an empty Fake.
func NewFake() *Fake {
	return &Fake{
		changed:         make(chan struct{}),
		locks:           map[string]*fakeLock{},
		sessions:        map[string]*fakeSession{},
		fences:          map[string]uint64{},
		elections:       map[string]api.Leader{},
		electionSession: map[string]string{},
		results:         map[string]fakeResult{},
		inflight:        map[string]*fakeWaiter{},
		calls:           map[string]int{},
	}
}

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
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Holder returns the owner and fence of key's hold (the first owner in
// sorted order when there are several), and whether key is held.
func (f *Fake) Holder(key string) (owner string, fence uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(time.Now())
	l := f.locks[key]
	if l == nil {
		return "", 0, false
	}
	for _, o := range sortedKeys(l.holds) {
		return o, l.holds[o].fence, true
	}
	return "", 0, false
}

// Changed returns a channel closed at the next state change.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// begin counts a call and returns the injected failure, if any. f.mu held.
func (f *Fake) begin(method, reqID string) error {
	f.calls[method]++
	if reqID != "" {
		f.seen = append(f.seen, reqID)
	}
	if f.failErr != nil {
		return fmt.Errorf("fake %s: %w", method, f.failErr)
	}
	f.expire(time.Now())
	return nil
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func keysOf(key string, keys []string) []string {
	if len(keys) > 0 {
		return keys
	}
	return []string{key}
}

// ---- locks ----

// Acquire implements api.Locker.
func (f *Fake) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	return f.acquire(ctx, "Acquire", req, true)
}

// TryAcquire implements api.Locker.
func (f *Fake) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	return f.acquire(ctx, "TryAcquire", req, false)
}

func (f *Fake) acquire(ctx context.Context, method string, req api.AcquireRequest, wait bool) (api.Lease, error) {
	f.mu.Lock()
	if err := f.begin(method, req.RequestID); err != nil {
		f.mu.Unlock()
		return api.Lease{}, err
	}
	if r, ok := f.results[req.RequestID]; ok && req.RequestID != "" {
		f.mu.Unlock()
		return r.lease, r.err
	}
	w := f.inflight[req.RequestID]
	if w == nil {
		if err := req.Validate(api.DefaultLimits()); err != nil {
			f.mu.Unlock()
			return api.Lease{}, err
		}
		if req.Session != "" && f.sessions[req.Session] == nil {
			f.mu.Unlock()
			return api.Lease{}, fmt.Errorf("%w: %s", api.ErrSessionExpired, req.Session)
		}
		f.nextID++
		w = &fakeWaiter{req: req, keys: keysOf(req.Key, req.Keys), id: fmt.Sprintf("w%d", f.nextID), done: make(chan struct{}),
			queued: time.Now()}
		if !f.grantable(w, f.waiters) {
			if !wait {
				f.mu.Unlock()
				return api.Lease{}, fmt.Errorf("%w: %s", api.ErrLocked, strings.Join(w.keys, ","))
			}
			f.waiters = append(f.waiters, w)
			if req.RequestID != "" {
				f.inflight[req.RequestID] = w
			}
			f.notify()
		} else {
			f.finish(w, fakeResult{lease: f.grant(w, time.Now())})
		}
	}
	var waitC <-chan time.Time
	if req.WaitMs > 0 {
		t := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
		defer t.Stop()
		waitC = t.C
	}
	for {
		select {
		case <-w.done:
			f.mu.Unlock()
			return w.result.lease, w.result.err
		default:
		}
		ch := f.changed
		next := f.nextDeadline()
		f.mu.Unlock()
		tick, stop := timerUntil(next)
		select {
		case <-w.done:
		case <-ch:
		case <-tick:
		case <-waitC:
			stop()
			f.mu.Lock()
			f.abandon(w, fmt.Errorf("%w: %s", api.ErrWaitTimeout, strings.Join(w.keys, ",")), true)
			continue
		case <-ctx.Done():
			stop()
			f.mu.Lock()
			// Cancellation is not a final answer: a retry with the same
			// request id starts over.
			f.abandon(w, fmt.Errorf("%w: %v", api.ErrCancelled, ctx.Err()), false)
			continue
		}
		stop()
		f.mu.Lock()
		f.expire(time.Now())
	}
}

// abandon removes a still-queued waiter with err. f.mu held.
func (f *Fake) abandon(w *fakeWaiter, err error, final bool) {
	select {
	case <-w.done:
		return // granted meanwhile: the grant stands
	default:
	}
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	delete(f.inflight, w.req.RequestID)
	w.result = fakeResult{err: err}
	close(w.done)
	if final && w.req.RequestID != "" {
		f.results[w.req.RequestID] = w.result
	}
	f.notify()
	f.pump(time.Now())
}

func (f *Fake) finish(w *fakeWaiter, r fakeResult) {
	w.result = r
	close(w.done)
	if w.req.RequestID != "" {
		delete(f.inflight, w.req.RequestID)
		f.results[w.req.RequestID] = r
	}
}

// grantable: every key of w is free for it, and no waiter in before (the
// ones queued ahead of w) wants any of them. f.mu held.
func (f *Fake) grantable(w *fakeWaiter, before []*fakeWaiter) bool {
	for _, k := range w.keys {
		for _, b := range before {
			for _, bk := range b.keys {
				if bk == k {
					return false
				}
			}
		}
		l := f.locks[k]
		if l == nil || len(l.holds) == 0 {
			continue
		}
		if _, mine := l.holds[w.req.Owner]; mine {
			continue
		}
		mode := modeOf(w.req.Mode)
		switch {
		case mode == api.ModeShared && l.mode == api.ModeShared:
		case mode == api.ModeSemaphore && l.mode == api.ModeSemaphore && len(l.holds) < l.permits:
		default:
			return false
		}
	}
	return true
}

func modeOf(m string) string {
	if m == "" {
		return api.ModeExclusive
	}
	return m
}

// grant gives w its keys. f.mu held.
func (f *Fake) grant(w *fakeWaiter, now time.Time) api.Lease {
	f.index++
	ttl := time.Duration(w.req.TTLMs) * time.Millisecond
	lease := api.Lease{Key: w.req.Key, Keys: w.req.Keys, Owner: w.req.Owner, TTLMs: w.req.TTLMs, Fence: f.index, Count: 1}
	for _, k := range w.keys {
		l := f.locks[k]
		if l == nil || len(l.holds) == 0 {
			l = &fakeLock{mode: modeOf(w.req.Mode), permits: w.req.Permits, holds: map[string]*fakeHold{}}
			f.locks[k] = l
		}
		h := l.holds[w.req.Owner]
		if h == nil {
			h = &fakeHold{mode: modeOf(w.req.Mode), fence: f.index, session: w.req.Session, meta: w.req.Meta, granted: now}
			l.holds[w.req.Owner] = h
		} else {
			h.extended = now
		}
		if w.req.Reentrant || h.count == 0 {
			h.count++
		}
		h.ttl, h.deadline = ttl, now.Add(ttl)
		lease.Fence, lease.Count = h.fence, h.count
	}
	lease.Deadline = now.Add(ttl).UnixMilli()
	f.notify()
	return lease
}

// pump grants queued waiters in arrival order. f.mu held.
func (f *Fake) pump(now time.Time) {
	var blocked []*fakeWaiter
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if f.grantable(w, blocked) {
			f.finish(w, fakeResult{lease: f.grant(w, now)})
			continue
		}
		blocked = append(blocked, w)
		kept = append(kept, w)
	}
	f.waiters = kept
}

// expire ends holds and sessions whose deadline passed, then hands freed
// keys to waiters. f.mu held.
func (f *Fake) expire(now time.Time) {
	changed := false
	for id, s := range f.sessions {
		if !now.Before(s.deadline) {
			delete(f.sessions, id)
			f.dropSession(id)
			changed = true
		}
	}
	for k, l := range f.locks {
		for o, h := range l.holds {
			if !now.Before(h.deadline) {
				delete(l.holds, o)
				changed = true
			}
		}
		if len(l.holds) == 0 {
			delete(f.locks, k)
		}
	}
	if changed {
		f.notify()
	}
	f.pump(now)
}

func (f *Fake) dropSession(id string) {
	for k, l := range f.locks {
		for o, h := range l.holds {
			if h.session == id {
				delete(l.holds, o)
			}
		}
		if len(l.holds) == 0 {
			delete(f.locks, k)
		}
	}
	for name, ld := range f.elections {
		if ld.Value != "" && f.electionSession[name] == id {
			delete(f.elections, name)
		}
	}
	f.notify()
}

// nextDeadline is the earliest hold or session deadline. f.mu held.
func (f *Fake) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, l := range f.locks {
		for _, h := range l.holds {
			consider(h.deadline)
		}
	}
	for _, s := range f.sessions {
		consider(s.deadline)
	}
	return next
}

// Release implements api.Locker.
func (f *Fake) Release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Release", req.RequestID); err != nil {
		return api.ReleaseResult{}, err
	}
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return api.ReleaseResult{}, err
	}
	if r, ok := f.results[req.RequestID]; ok && req.RequestID != "" {
		return r.release, r.err
	}
	res, err := f.release(req)
	if req.RequestID != "" {
		f.results[req.RequestID] = fakeResult{release: res, err: err}
	}
	f.pump(time.Now())
	return res, err
}

func (f *Fake) release(req api.ReleaseRequest) (api.ReleaseResult, error) {
	keys := keysOf(req.Key, req.Keys)
	for _, k := range keys {
		l := f.locks[k]
		if l == nil {
			return api.ReleaseResult{}, fmt.Errorf("%w: %s", api.ErrNotHeld, k)
		}
		if _, ok := l.holds[req.Owner]; !ok && !req.Force {
			return api.ReleaseResult{}, fmt.Errorf("%w: %s", api.ErrNotOwner, k)
		}
	}
	res := api.ReleaseResult{Released: true}
	for _, k := range keys {
		l := f.locks[k]
		if req.Force {
			delete(f.locks, k)
			continue
		}
		h := l.holds[req.Owner]
		if req.Reentrant && h.count > 1 {
			h.count--
			res = api.ReleaseResult{Released: false, Count: h.count}
			continue
		}
		delete(l.holds, req.Owner)
		if len(l.holds) == 0 {
			delete(f.locks, k)
		}
	}
	f.notify()
	return res, nil
}

// Extend implements api.Locker.
func (f *Fake) Extend(ctx context.Context, req api.ExtendRequest) (api.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Extend", req.RequestID); err != nil {
		return api.Lease{}, err
	}
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return api.Lease{}, err
	}
	if r, ok := f.results[req.RequestID]; ok && req.RequestID != "" {
		return r.lease, r.err
	}
	lease, err := f.extend(req, time.Now())
	if req.RequestID != "" {
		f.results[req.RequestID] = fakeResult{lease: lease, err: err}
	}
	return lease, err
}

func (f *Fake) extend(req api.ExtendRequest, now time.Time) (api.Lease, error) {
	keys := keysOf(req.Key, req.Keys)
	for _, k := range keys {
		l := f.locks[k]
		if l == nil {
			return api.Lease{}, fmt.Errorf("%w: %s", api.ErrNotHeld, k)
		}
		if l.holds[req.Owner] == nil {
			return api.Lease{}, fmt.Errorf("%w: %s", api.ErrNotOwner, k)
		}
	}
	ttl := time.Duration(req.TTLMs) * time.Millisecond
	lease := api.Lease{Key: req.Key, Keys: req.Keys, Owner: req.Owner, TTLMs: req.TTLMs, Deadline: now.Add(ttl).UnixMilli()}
	for _, k := range keys {
		h := f.locks[k].holds[req.Owner]
		h.ttl, h.deadline, h.extended = ttl, now.Add(ttl), now
		lease.Fence, lease.Count = h.fence, h.count
	}
	f.notify()
	return lease, nil
}

// Inspect implements api.Locker.
func (f *Fake) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Inspect", ""); err != nil {
		return api.LockInfo{}, err
	}
	info, ok := f.info(key, time.Now())
	if !ok {
		return api.LockInfo{}, fmt.Errorf("%w: %s", api.ErrNotFound, key)
	}
	return info, nil
}

func (f *Fake) info(key string, now time.Time) (api.LockInfo, bool) {
	l := f.locks[key]
	info := api.LockInfo{Key: key, Kind: "lock", Holders: []api.Holder{}, Waiters: []api.Waiter{}, TTLMs: -1, AppliedIndex: f.index}
	for _, w := range f.waiters {
		for _, k := range w.keys {
			if k == key {
				info.Waiters = append(info.Waiters, api.Waiter{ID: w.id, Owner: w.req.Owner, Mode: modeOf(w.req.Mode), Keys: w.req.Keys, WaitMs: w.req.WaitMs,
					Meta: w.req.Meta, QueuedMs: w.queued.UnixMilli()})
			}
		}
	}
	if l == nil {
		return info, len(info.Waiters) > 0
	}
	info.Permits = l.permits
	for _, o := range sortedKeys(l.holds) {
		h := l.holds[o]
		info.Holders = append(info.Holders, api.Holder{
			Owner: o, Mode: h.mode, Count: h.count, Fence: h.fence, Session: h.session,
			TTLMs: h.deadline.Sub(now).Milliseconds(), Deadline: h.deadline.UnixMilli(),
			Meta: h.meta, GrantedMs: h.granted.UnixMilli(), ExtendedMs: unixMilliOrZero(h.extended),
		})
		if h.fence > info.Fence {
			info.Fence = h.fence
		}
		if rem := h.deadline.Sub(now).Milliseconds(); rem > info.TTLMs {
			info.TTLMs = rem
		}
	}
	return info, true
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// List implements api.Locker.
func (f *Fake) List(ctx context.Context, req api.ListRequest) (api.ListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("List", ""); err != nil {
		return api.ListResult{}, err
	}
	limit := req.Limit
	if limit == 0 {
		limit = 100
	}
	res := api.ListResult{Locks: []api.LockInfo{}}
	now := time.Now()
	for _, k := range sortedKeys(f.locks) {
		if !strings.HasPrefix(k, req.Prefix) || k <= req.After {
			continue
		}
		if len(res.Locks) == limit {
			res.Next = res.Locks[len(res.Locks)-1].Key
			break
		}
		info, _ := f.info(k, now)
		res.Locks = append(res.Locks, info)
	}
	return res, nil
}

// ---- sessions ----

// OpenSession implements api.Locker.
func (f *Fake) OpenSession(ctx context.Context, ttl time.Duration) (api.SessionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("OpenSession", ""); err != nil {
		return api.SessionInfo{}, err
	}
	if sreq := api.SessionTTL(ttl); sreq.Validate(api.DefaultLimits()) != nil {
		return api.SessionInfo{}, sreq.Validate(api.DefaultLimits())
	}
	f.nextID++
	id := fmt.Sprintf("s%d", f.nextID)
	f.sessions[id] = &fakeSession{ttl: ttl, deadline: time.Now().Add(ttl)}
	f.notify()
	return api.SessionInfo{ID: id, TTLMs: ttl.Milliseconds()}, nil
}

// KeepAlive implements api.Locker.
func (f *Fake) KeepAlive(ctx context.Context, id string) (api.SessionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("KeepAlive", ""); err != nil {
		return api.SessionInfo{}, err
	}
	s := f.sessions[id]
	if s == nil {
		return api.SessionInfo{}, fmt.Errorf("%w: %s", api.ErrSessionExpired, id)
	}
	s.deadline = time.Now().Add(s.ttl)
	return api.SessionInfo{ID: id, TTLMs: s.ttl.Milliseconds()}, nil
}

// CloseSession implements api.Locker.
func (f *Fake) CloseSession(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("CloseSession", ""); err != nil {
		return err
	}
	if f.sessions[id] == nil {
		return fmt.Errorf("%w: %s", api.ErrSessionExpired, id)
	}
	delete(f.sessions, id)
	f.dropSession(id)
	f.pump(time.Now())
	return nil
}

// ExpireSession ends a session now, as if its TTL had passed.
func (f *Fake) ExpireSession(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, id)
	f.dropSession(id)
	f.pump(time.Now())
}

// ---- fences, elections, status ----

// FenceCheck implements api.Locker.
func (f *Fake) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("FenceCheck", ""); err != nil {
		return api.FenceResult{}, err
	}
	freq := api.FenceCheckRequest{Resource: resource, Token: token}
	if err := freq.Validate(api.DefaultLimits()); err != nil {
		return api.FenceResult{}, err
	}
	if token > f.index { // the fence registry: f.index is the highest fence granted
		return api.FenceResult{}, fmt.Errorf("%w: token %d is above the highest fence issued, %d", api.ErrBadRequest, token, f.index)
	}
	if token < f.fences[resource] {
		return api.FenceResult{OK: false, Highest: f.fences[resource]}, nil
	}
	f.fences[resource] = token
	return api.FenceResult{OK: true, Highest: token}, nil
}

// Campaign implements api.Locker. f.elections keeps the leader with its
// token; Observe publishes it without.
func (f *Fake) Campaign(ctx context.Context, req api.CampaignRequest) (api.Leader, error) {
	if err := req.Validate(api.DefaultLimits()); err != nil {
		return api.Leader{}, err
	}
	if req.Token == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		req.Token = hex.EncodeToString(b[:])
	}
	election, value, session := req.Election, req.Value, req.Session
	f.mu.Lock()
	if err := f.begin("Campaign", ""); err != nil {
		f.mu.Unlock()
		return api.Leader{}, err
	}
	for {
		if f.sessions[session] == nil {
			f.mu.Unlock()
			return api.Leader{}, fmt.Errorf("%w: %s", api.ErrSessionExpired, session)
		}
		cur, ok := f.elections[election]
		if ok && cur.Token == req.Token {
			f.mu.Unlock()
			return cur, nil
		}
		if !ok {
			f.index++
			ld := api.Leader{Election: election, Value: value, Fence: f.index, Token: req.Token}
			f.elections[election] = ld
			f.electionSession[election] = session
			f.notify()
			f.mu.Unlock()
			return ld, nil
		}
		ch := f.changed
		next := f.nextDeadline()
		f.mu.Unlock()
		tick, stop := timerUntil(next)
		select {
		case <-ch:
		case <-tick:
		case <-ctx.Done():
			stop()
			return api.Leader{}, fmt.Errorf("%w: %v", api.ErrCancelled, ctx.Err())
		}
		stop()
		f.mu.Lock()
		f.expire(time.Now())
	}
}

// leaderOf checks that ld is election's current leadership. f.mu held.
func (f *Fake) leaderOf(ld api.Leader) (api.Leader, error) {
	if ld.Token == "" {
		return api.Leader{}, fmt.Errorf("%w: the leadership's token is required", api.ErrNotOwner)
	}
	cur, ok := f.elections[ld.Election]
	if !ok {
		return api.Leader{}, fmt.Errorf("%w: %s has no leader", api.ErrNotHeld, ld.Election)
	}
	if cur.Token != ld.Token || cur.Value != ld.Value {
		return api.Leader{}, fmt.Errorf("%w: not the leader of %s", api.ErrNotOwner, ld.Election)
	}
	return cur, nil
}

// Resign implements api.Locker.
func (f *Fake) Resign(ctx context.Context, ld api.Leader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Resign", ""); err != nil {
		return err
	}
	f.expire(time.Now())
	if _, err := f.leaderOf(ld); err != nil {
		return err
	}
	delete(f.elections, ld.Election)
	f.notify()
	return nil
}

// Proclaim implements api.Locker.
func (f *Fake) Proclaim(ctx context.Context, ld api.Leader, value string) (api.Leader, error) {
	preq := api.ProclaimRequest{Election: ld.Election, Value: ld.Value, Token: ld.Token, NewValue: value}
	if err := preq.Validate(api.DefaultLimits()); err != nil {
		return api.Leader{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Proclaim", ""); err != nil {
		return api.Leader{}, err
	}
	f.expire(time.Now())
	cur, err := f.leaderOf(ld)
	if err != nil {
		return api.Leader{}, err
	}
	cur.Value = value
	f.elections[ld.Election] = cur
	f.notify()
	return cur, nil
}

// Observe implements api.Locker: the current leader (if any), then every
// change, until ctx ends.
func (f *Fake) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	f.mu.Lock()
	if err := f.begin("Observe", ""); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Unlock()
	out := make(chan api.Leader)
	// Ends when ctx ends; closes out.
	go func() {
		defer close(out)
		var last api.Leader
		first := true
		for {
			f.mu.Lock()
			f.expire(time.Now())
			cur := f.elections[election].Public()
			ch := f.changed
			f.mu.Unlock()
			if cur.Election == "" {
				cur.Election = election
			}
			if first && cur.Value != "" || !first && cur != last {
				select {
				case out <- cur:
				case <-ctx.Done():
					return
				}
				last = cur
			}
			first = false
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Status implements api.Locker.
func (f *Fake) Status(ctx context.Context) (api.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Status", ""); err != nil {
		return api.Status{}, err
	}
	return api.Status{
		ID: "fake", Leader: "fake", State: "Leader", Term: 1,
		AppliedIndex: f.index, CommitIndex: f.index,
		Members:  append([]api.Member{{ID: "fake", Address: "fake", Suffrage: "Voter", Leader: true}}, f.members...),
		Locks:    len(f.locks),
		Keys:     len(f.locks),
		Waiters:  len(f.waiters),
		Sessions: len(f.sessions),
	}, nil
}

// AddVoter implements httpapi.Membership: it adds a member to Status.
func (f *Fake) AddVoter(ctx context.Context, id, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("AddVoter", ""); err != nil {
		return err
	}
	for _, m := range f.members {
		if m.ID == id {
			if m.Address == addr {
				return nil
			}
			return fmt.Errorf("%w: %s is at %s", api.ErrConflict, id, m.Address)
		}
	}
	f.members = append(f.members, api.Member{ID: id, Address: addr, Suffrage: "Voter"})
	return nil
}

// RemoveServer implements httpapi.Membership.
func (f *Fake) RemoveServer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("RemoveServer", ""); err != nil {
		return err
	}
	for i, m := range f.members {
		if m.ID == id {
			f.members = append(f.members[:i], f.members[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: member %s", api.ErrNotFound, id)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// timerUntil returns a channel that fires just after t (nil for a zero t:
// never) and its stop function.
func timerUntil(t time.Time) (<-chan time.Time, func()) {
	if t.IsZero() {
		return nil, func() {}
	}
	tm := time.NewTimer(time.Until(t) + time.Millisecond)
	return tm.C, func() { tm.Stop() }
}
