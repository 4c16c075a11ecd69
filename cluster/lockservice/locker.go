package lockservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/oteltrace"
)

// Service is the lock API (api.Locker, elections included) over a
// replica: each method validates its request, builds one FSM command,
// proposes it through the replica's Apply and maps the result; FSM
// refusals become api errors through errTable. cluster.Node and Local
// embed it, so the same code serves a raft cluster and a single local
// table.
type Service struct {
	r   Replica
	log hclog.Logger
	// cancelTimeout bounds the cleanup after a blocking acquire's caller
	// gave up (cancelWait), which runs on a fresh context.
	cancelTimeout time.Duration
	// traced: the replica makes spans under a recording caller's span
	// (cluster.Config.TracerProvider set; otel.go).
	traced bool
	// handoffs links a waiter's span to the traced release that handed
	// it the lock, when both ran through this replica.
	handoffs handoffLinks
}

var (
	_ api.Locker = (*Service)(nil)
	_ api.Locker = (*Local)(nil)
)

// New returns the lock service over r. cancelTimeout bounds the cleanup
// after a blocking acquire's caller gave up; traced: r makes spans under
// a recording caller's span, and so does the service (otel.go).
func New(r Replica, log hclog.Logger, cancelTimeout time.Duration, traced bool) *Service {
	return &Service{r: r, log: log, cancelTimeout: cancelTimeout, traced: traced}
}

// Status implements api.Locker: the replica's.
func (s *Service) Status(ctx context.Context) (api.Status, error) {
	return s.r.Status(ctx)
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", api.ErrBadRequest, fmt.Sprintf(format, args...))
}

// Limits returns the request limits this node (or Local) enforces,
// derived from its table's fsm.Config: every front end validates a
// request with them before it proposes anything (the FSM checks the same
// values again).
func (s *Service) Limits() api.Limits {
	return s.r.RequestLimits()
}

// LimitsOf is the request limits that a table of config c enforces.
func LimitsOf(c fsm.Config) api.Limits {
	return api.Limits{
		MaxKeyBytes: c.MaxKeyBytes, MaxOwnerBytes: c.MaxOwnerBytes, MaxKeys: fsm.MaxLockKeys,
		MinTTLMs: c.MinTTL, MaxTTLMs: c.MaxTTL, MaxPermits: c.MaxPermits,
		MaxMetaEntries: c.MaxMetaEntries, MaxMetaKeyBytes: c.MaxMetaKeyBytes,
		MaxMetaValueBytes: c.MaxMetaValueBytes, MaxMetaBytes: c.MaxMetaBytes,
	}
}

// acquireCmd validates req and builds its command. An acquire of the
// embedded API carries this process's host and pid in its metadata
// unless ctx says otherwise (api.WithoutDefaultMeta, which the HTTP and
// RESP front ends set: their requests come from other processes).
func (s *Service) acquireCmd(ctx context.Context, req api.AcquireRequest) (*fsm.Command, error) {
	if err := req.Validate(s.Limits()); err != nil {
		return nil, err
	}
	if !api.DefaultMetaOff(ctx) {
		req.Meta = s.Limits().WithProcessMeta(req.Meta)
	}
	mode, ok := fsm.ParseMode(req.Mode)
	if !ok {
		return nil, badRequest("unknown mode %q: want %s", req.Mode, api.ModeList)
	}
	c := &fsm.Command{
		Op: fsm.OpAcquire, ReqID: req.RequestID, Key: req.Key, Keys: req.Keys, Owner: req.Owner,
		Mode: mode, Permits: req.Permits, TTL: req.TTLMs, Reentrant: req.Reentrant,
		Session: req.Session, LockDelay: req.LockDelay, MaxHold: req.MaxHoldMs, Meta: fsm.MetaOf(req.Meta),
	}
	if len(c.Keys) > 0 {
		c.Key = ""
	}
	return c, nil
}

// lease is the answer to a grant or extend applied at FSM time now: its
// TTL is what the table granted (Deadline - now, less than asked under a
// max hold), so a client's safe deadline never outlives the hold.
func lease(req api.AcquireRequest, fence uint64, deadline, now int64, count int) api.Lease {
	l := api.Lease{Owner: req.Owner, Fence: fence, TTLMs: req.TTLMs, Count: count, Deadline: deadline}
	if deadline > 0 && now > 0 {
		l.TTLMs = max(deadline-now, 0)
	}
	if len(req.Keys) > 0 {
		l.Keys = append([]string(nil), req.Keys...)
	} else {
		l.Key = req.Key
	}
	return l
}

// TryAcquire takes the lock if it is free now; otherwise ErrLocked (or
// another refusal). It never waits in the queue. Without req.RequestID
// the node assigns one, so a leader lost mid-request is retried safely.
// req.Meta gets this process's host and pid where it has none of those
// names, unless ctx comes from api.WithoutDefaultMeta (as Acquire).
func (s *Service) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	cmd, err := s.acquireCmd(ctx, req)
	if err != nil {
		return api.Lease{}, err
	}
	if cmd.ReqID == "" {
		// Exactly-once in the FSM makes the acquire safe to retry when
		// the leader is lost mid-request, so a grant is never leaked.
		cmd.ReqID = s.r.NewReqID()
	}
	res, err := s.r.Apply(ctx, cmd)
	if err != nil {
		return api.Lease{}, err
	}
	if res.Err != nil {
		return api.Lease{}, apiErr(res.Err)
	}
	if !res.Granted {
		return api.Lease{}, fmt.Errorf("cluster: acquire neither granted nor refused")
	}
	return lease(req, res.Fence, res.Deadline, res.Now, res.Count), nil
}

// Acquire takes the lock, waiting in the lock's FIFO queue for up to
// req.WaitMs (api.MaxWait when 0, and never past ctx's deadline). The
// wait is completed by this node applying the grant: no polling. If ctx
// ends first, the waiter is removed through the log and ctx's error is
// returned (wrapping api.ErrCancelled); a grant that raced with the
// cancel is released again, so the caller never holds a lock it was not
// told about — except with a req.RequestID, whose grant another attempt
// may have delivered (see cancelWait): that one ends with its lease.
//
// req.Meta gets this process's host and pid where it has none of those
// names, unless ctx comes from api.WithoutDefaultMeta: the HTTP and RESP
// front ends pass such contexts, so requests of other processes never
// show the node's process as their holder.
func (s *Service) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	if s.traced {
		if sp := oteltrace.Recording(ctx); sp != nil {
			return s.acquireTraced(ctx, req)
		}
	}
	return s.acquire(ctx, req)
}

func (s *Service) acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	cmd, err := s.acquireCmd(ctx, req)
	if err != nil {
		return api.Lease{}, err
	}
	wait := req.WaitMs
	if wait == 0 {
		wait = api.MaxWait.Milliseconds()
	}
	if dl, ok := ctx.Deadline(); ok {
		// Let the FSM end the wait when the caller would give up anyway,
		// sparing a cancel; the margin lets a grant still arrive in time.
		left := time.Until(dl).Milliseconds()
		if left < 1 {
			left = 1
		}
		wait = min(wait, left)
	}
	cmd.Wait = wait
	if cmd.ReqID == "" {
		cmd.ReqID = s.r.NewReqID()
	}
	id := cmd.ReqID
	ch := s.r.AwaitWaiter(id)
	defer s.r.StopWaiter(id)

	s.r.DeferQueuedAcquire(ctx, cmd)
	res, err := s.r.Apply(ctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up while the acquire was on its way: it may
			// have been queued (or granted) all the same, and nobody would
			// take that waiter out of the queue. Cancelling one that never
			// got there changes nothing.
			return api.Lease{}, s.cancelWait(id, req, ch, 0, err)
		}
		return api.Lease{}, err
	}
	switch {
	case res.Err != nil:
		return api.Lease{}, apiErr(res.Err)
	case res.Granted:
		s.r.ObserveWait(0)
		return lease(req, res.Fence, res.Deadline, res.Now, res.Count), nil
	case !res.Queued:
		return api.Lease{}, fmt.Errorf("cluster: acquire neither granted, queued nor refused")
	}
	ws := s.startWait(ctx, req)
	defer ws.end()
	// The channel was registered before the acquire's entry existed, so
	// the grant (a later entry) cannot have been missed, even when the
	// Queued answer came from the dedupe cache for a retried request id.
	//
	// Only an outcome applied after the entry that answered Queued is
	// this wait's. Apply retries a proposal whose answer was lost; if the
	// first one was queued and its wait timed out before the retry was
	// applied, the FSM has forgotten the id and queues it again, and the
	// first wait's end is already in ch: taken as the answer, it would
	// report a timeout for a waiter that is still queued and may be
	// granted — a hold nobody knows of. An answer from the dedupe cache
	// or the waiter table means the first wait was still queued, so its
	// outcome comes later too.
	for {
		select {
		case we := <-ch:
			if we.index <= res.Index {
				continue
			}
			l, err := waitOutcome(req, we.ev, res.Now)
			if err == nil {
				s.r.ObserveWait(float64(l.WaitedMs) / 1e3)
			}
			ws.outcome(s, req, we.index, l, err)
			return l, err
		case <-ctx.Done():
			ws.outcome(s, req, 0, api.Lease{}, ctx.Err())
			return api.Lease{}, s.cancelWait(id, req, ch, res.Index, ctx.Err())
		case <-s.r.Closing():
			return api.Lease{}, ErrClosed
		}
	}
}

// waitOutcome is the answer to an acquire queued at FSM time queuedAt
// whose wait ended with ev.
func waitOutcome(req api.AcquireRequest, ev fsm.Event, queuedAt int64) (api.Lease, error) {
	if ev.Kind == fsm.EvGranted {
		l := lease(req, ev.Fence, ev.Deadline, ev.Now, ev.Count)
		if queuedAt > 0 && ev.Now > queuedAt {
			l.WaitedMs = ev.Now - queuedAt
		}
		return l, nil
	}
	if ev.Err == nil {
		return api.Lease{}, fmt.Errorf("%w: wait ended", api.ErrCancelled)
	}
	return api.Lease{}, apiErr(ev.Err)
}

// cancelWait removes waiter id, queued by the entry at index queued,
// after the caller gave up, with a fresh context (the caller's has
// ended). If the waiter was granted in the meantime, the hold is
// released again — unless id is the caller's request id: then another
// attempt of the same request (a client's retry after its connection
// dropped, on this node or another) may have been answered with that
// grant, and releasing it would leave that client holding a lock that
// is free. Such a grant ends with its lease, or with the release of the
// attempt that delivered it.
func (s *Service) cancelWait(id string, req api.AcquireRequest, ch <-chan WaiterEvent, queued uint64, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cancelTimeout)
	defer cancel()
	res, err := s.r.Apply(ctx, &fsm.Command{Op: fsm.OpCancelWait, ReqID: id, Owner: req.Owner})
	granted := err == nil && res.Granted
	select {
	case we := <-ch:
		granted = granted || (we.index > queued && we.ev.Kind == fsm.EvGranted)
	default:
	}
	if err != nil {
		s.log.Warn("cancelling a wait failed; the waiter ends at its deadline", "waiter", id, "error", err)
	}
	if granted && req.RequestID != "" {
		s.log.Info("a grant raced with a cancel; kept, another attempt of the request may hold it", "waiter", id, "key", req.Key)
		granted = false
	}
	if granted {
		rel := &fsm.Command{Op: fsm.OpRelease, Key: req.Key, Keys: req.Keys, Owner: req.Owner, Reentrant: req.Reentrant}
		if len(rel.Keys) > 0 {
			rel.Key = ""
		}
		if _, err := s.r.Apply(ctx, rel); err != nil {
			s.log.Warn("releasing a grant that raced with a cancel failed; it ends at its lease", "waiter", id, "error", err)
		}
	}
	return fmt.Errorf("%w: %w", api.ErrCancelled, cause)
}

// Release ends the owner's hold (or decrements a reentrant count).
func (s *Service) Release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	if err := req.Validate(s.Limits()); err != nil {
		return api.ReleaseResult{}, err
	}
	c := &fsm.Command{Op: fsm.OpRelease, ReqID: req.RequestID, Key: req.Key, Keys: req.Keys,
		Owner: req.Owner, Reentrant: req.Reentrant, Force: req.Force}
	if len(c.Keys) > 0 {
		c.Key = ""
	}
	s.r.OpenHandoff(c)
	if s.traced {
		if sp := oteltrace.Recording(ctx); sp != nil {
			keys, sc := spanKeys(req.Key, req.Keys), sp.SpanContext()
			s.handoffs.begin(keys, sc)
			var index uint64
			defer func() { s.handoffs.end(keys, sc, index) }()
			res, err := s.r.Apply(ctx, c)
			if err == nil && res.Err == nil {
				index = res.Index
			}
			return releaseResult(res, err)
		}
	}
	return releaseResult(s.r.Apply(ctx, c))
}

// releaseResult is Release's answer to an applied release.
func releaseResult(res fsm.Result, err error) (api.ReleaseResult, error) {
	if err != nil {
		return api.ReleaseResult{}, err
	}
	if res.Err != nil {
		return api.ReleaseResult{}, apiErr(res.Err)
	}
	return api.ReleaseResult{Released: res.Released, Count: res.Count}, nil
}

// Extend renews the owner's lease to now+TTL.
func (s *Service) Extend(ctx context.Context, req api.ExtendRequest) (api.Lease, error) {
	if err := req.Validate(s.Limits()); err != nil {
		return api.Lease{}, err
	}
	c := &fsm.Command{Op: fsm.OpExtend, ReqID: req.RequestID, Key: req.Key, Keys: req.Keys,
		Owner: req.Owner, TTL: req.TTLMs}
	if len(c.Keys) > 0 {
		c.Key = ""
	}
	res, err := s.r.Apply(ctx, c)
	if err != nil {
		return api.Lease{}, err
	}
	if res.Err != nil {
		return api.Lease{}, apiErr(res.Err)
	}
	return lease(api.AcquireRequest{Key: req.Key, Keys: req.Keys, Owner: req.Owner, TTLMs: req.TTLMs},
		res.Fence, res.Deadline, res.Now, res.Count), nil
}

// Inspect describes one key (linearizable unless opts.Stale).
func (s *Service) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	if err := s.Limits().CheckKey(key); err != nil {
		return api.LockInfo{}, err
	}
	var info api.LockInfo
	var ierr error
	// Before the read: the state answered is at least as new as its index.
	idx := s.KeyIndex(key)
	err := s.r.Read(ctx, opts.Stale, func(t *fsm.Table, now int64) {
		li, err := t.Inspect(key, now)
		if err != nil {
			ierr = apiErr(err)
			return
		}
		info = lockInfo(li, now, t.AppliedIndex())
	})
	if err != nil {
		return api.LockInfo{}, err
	}
	info.Index = idx
	return info, ierr
}

// List pages through locks by key prefix (linearizable unless Stale).
func (s *Service) List(ctx context.Context, req api.ListRequest) (api.ListResult, error) {
	if err := req.Validate(s.Limits()); err != nil {
		return api.ListResult{}, err
	}
	limit := req.Limit
	if limit == 0 {
		limit = 100
	}
	out := api.ListResult{Index: s.PrefixIndex(req.Prefix)} // before the read, as Inspect
	err := s.r.Read(ctx, req.Stale, func(t *fsm.Table, now int64) {
		infos, next := t.List(req.Prefix, req.After, limit, now)
		out.Locks = make([]api.LockInfo, 0, len(infos))
		for _, li := range infos {
			out.Locks = append(out.Locks, lockInfo(li, now, t.AppliedIndex()))
		}
		out.Next = next
	})
	return out, err
}

func kindName(k fsm.Kind) string {
	switch k {
	case fsm.KindLock:
		return "lock"
	case fsm.KindString:
		return "string"
	case fsm.KindHash:
		return "hash"
	case fsm.KindSet:
		return "set"
	case fsm.KindZSet:
		return "zset"
	case fsm.KindList:
		return "list"
	}
	return "none"
}

func lockInfo(li fsm.LockInfo, now int64, applied uint64) api.LockInfo {
	out := api.LockInfo{
		Key: li.Key, Kind: kindName(li.Kind), Permits: li.Permits, Fence: li.Fence,
		Holders: make([]api.Holder, 0, len(li.Holders)), Waiters: make([]api.Waiter, 0, len(li.Waiters)),
		TTLMs: -1, AppliedIndex: applied,
	}
	if li.DelayUntil > now {
		out.LockDelayMs = li.DelayUntil - now
	}
	if li.Deadline > 0 {
		out.TTLMs = max(li.Deadline-now, 0)
	}
	for _, h := range li.Holders {
		ttl := int64(-1)
		if h.Deadline > 0 {
			ttl = max(h.Deadline-now, 0)
		}
		out.Holders = append(out.Holders, api.Holder{Owner: h.Owner, Mode: h.Mode.String(), Count: h.Count,
			Fence: h.Fence, TTLMs: ttl, Session: h.Session, Deadline: h.Deadline,
			Meta: h.Meta.Map(), GrantedMs: h.Granted, ExtendedMs: h.Extended})
	}
	for _, w := range li.Waiters {
		aw := api.Waiter{ID: w.ID, Owner: w.Owner, Mode: w.Mode.String(), WaitMs: max(w.Deadline-now, 0),
			Meta: w.Meta.Map(), QueuedMs: w.Queued}
		if len(w.Keys) > 1 {
			aw.Keys = w.Keys
		}
		out.Waiters = append(out.Waiters, aw)
	}
	out.State = api.StateOf(out)
	return out
}

// OpenSession creates a session with a random 128-bit id.
func (s *Service) OpenSession(ctx context.Context, ttl time.Duration) (api.SessionInfo, error) {
	sreq := api.SessionTTL(ttl)
	if err := sreq.Validate(s.Limits()); err != nil {
		return api.SessionInfo{}, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return api.SessionInfo{}, err
	}
	id := hex.EncodeToString(b[:])
	// The id doubles as the request id: a retry after a lost leader is
	// answered from the dedupe cache instead of failing ErrSessionExists.
	res, err := s.r.Apply(ctx, &fsm.Command{Op: fsm.OpSessionOpen, ReqID: "session-open-" + id, Session: id, TTL: ttl.Milliseconds()})
	if err != nil {
		return api.SessionInfo{}, err
	}
	if res.Err != nil {
		return api.SessionInfo{}, apiErr(res.Err)
	}
	return api.SessionInfo{ID: id, TTLMs: ttl.Milliseconds()}, nil
}

// KeepAlive renews a session for its TTL.
func (s *Service) KeepAlive(ctx context.Context, id string) (api.SessionInfo, error) {
	sreq := api.SessionIDRequest{ID: id}
	if err := sreq.Validate(s.Limits()); err != nil {
		return api.SessionInfo{}, err
	}
	res, err := s.r.Apply(ctx, &fsm.Command{Op: fsm.OpSessionKeepAlive, Session: id})
	if err != nil {
		return api.SessionInfo{}, err
	}
	if res.Err != nil {
		return api.SessionInfo{}, apiErr(res.Err)
	}
	info := api.SessionInfo{ID: id}
	// The TTL is the session's own; read it from the applied state.
	err = s.r.Read(ctx, true, func(t *fsm.Table, _ int64) {
		if ss, ok := t.Session(id, 0); ok {
			info.TTLMs = ss.TTL
		}
	})
	return info, err
}

// CloseSession ends a session: its holds are released and its waiters
// removed.
func (s *Service) CloseSession(ctx context.Context, id string) error {
	sreq := api.SessionIDRequest{ID: id}
	if err := sreq.Validate(s.Limits()); err != nil {
		return err
	}
	res, err := s.r.Apply(ctx, &fsm.Command{Op: fsm.OpSessionClose, Session: id})
	if err != nil {
		return err
	}
	return apiErr(res.Err)
}

// FenceCheck is CheckAndAdvance on the fence registry: ok iff token is at
// least the highest token seen for resource, which it then becomes. A
// token above the highest fence the cluster ever granted is refused
// (api.ErrBadRequest) and changes nothing.
func (s *Service) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	freq := api.FenceCheckRequest{Resource: resource, Token: token}
	if err := freq.Validate(s.Limits()); err != nil {
		return api.FenceResult{}, err
	}
	res, err := s.r.Apply(ctx, &fsm.Command{Op: fsm.OpFenceCheck, Key: resource, Token: token})
	if err != nil {
		return api.FenceResult{}, err
	}
	switch {
	case res.Err == nil:
		return api.FenceResult{OK: true, Highest: res.Fence}, nil
	case errors.Is(res.Err, fsm.ErrStaleFence):
		return api.FenceResult{OK: false, Highest: res.Fence}, nil
	}
	return api.FenceResult{}, apiErr(res.Err)
}
