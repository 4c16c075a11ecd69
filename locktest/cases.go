package locktest

import (
	"context"
	"errors"
	"time"

	"github.com/locknode/locknode/api"
)

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"TryAcquireExcludes", tryAcquireExcludes},
	{"ReleaseOnlyByOwner", releaseOnlyByOwner},
	{"FencesIncrease", fencesIncrease},
	{"ExtendKeepsFence", extendKeepsFence},
	{"AcquireWaitsFIFO", acquireWaitsFIFO},
	{"AcquireWaitTimeout", acquireWaitTimeout},
	{"AcquireCancelLeavesQueue", acquireCancelLeavesQueue},
	{"LeaseExpires", leaseExpires},
	{"MultiKeyAllOrNothing", multiKeyAllOrNothing},
	{"SharedAndSemaphore", sharedAndSemaphore},
	{"Reentrant", reentrant},
	{"SessionsReleaseHolds", sessionsReleaseHolds},
	{"SessionExpires", sessionExpires},
	{"FenceCheck", fenceCheck},
	{"InspectAndList", inspectAndList},
	{"RequestIDExactlyOnce", requestIDExactlyOnce},
	{"Election", election},
	{"ElectionSameValueTwoSessions", electionSameValue},
	{"ElectionNeedsToken", electionNeedsToken},
	{"Status", status},
	{"BadInput", badInput},
	{"BadLimits", badLimits},
}

func tryAcquireExcludes(s *suite) {
	k := s.key("k")
	s.mustTry(k, s.owner("a"), 30*time.Second)
	_, err := s.try(k, s.owner("b"), 30*time.Second)
	s.wantErr("TryAcquire of a held lock", err, api.ErrLocked)
	// Another key is independent.
	s.mustTry(s.key("other"), s.owner("b"), 30*time.Second)
}

func releaseOnlyByOwner(s *suite) {
	k := s.key("k")
	s.mustTry(k, s.owner("a"), 30*time.Second)
	_, err := s.release(k, s.owner("b"))
	s.wantErr("Release by a stranger", err, api.ErrNotOwner)
	_, err = s.l.Extend(s.ctx, api.ExtendRequest{Key: k, Owner: s.owner("b"), TTLMs: 1000})
	s.wantErr("Extend by a stranger", err, api.ErrNotOwner)
	// The stranger changed nothing.
	_, err = s.try(k, s.owner("c"), time.Second)
	s.wantErr("TryAcquire after refused release", err, api.ErrLocked)
	s.mustRelease(k, s.owner("a"))
	_, err = s.release(k, s.owner("a"))
	if !errors.Is(err, api.ErrNotHeld) && !errors.Is(err, api.ErrNotOwner) {
		s.t.Fatalf("second Release: %v, want ErrNotHeld or ErrNotOwner", err)
	}
	s.mustTry(k, s.owner("c"), 30*time.Second)
}

func fencesIncrease(s *suite) {
	var last uint64
	for i, k := range []string{s.key("a"), s.key("b"), s.key("a"), s.key("a")} {
		o := s.owner("o" + string(rune('0'+i)))
		l := s.mustTry(k, o, 30*time.Second)
		if l.Fence <= last {
			s.t.Fatalf("grant %d fence %d after %d", i, l.Fence, last)
		}
		last = l.Fence
		s.mustRelease(k, o)
	}
}

func extendKeepsFence(s *suite) {
	k := s.key("k")
	l := s.mustTry(k, s.owner("a"), 2*time.Second)
	e, err := s.l.Extend(s.ctx, api.ExtendRequest{Key: k, Owner: s.owner("a"), TTLMs: 30000})
	if err != nil || e.Fence != l.Fence {
		s.t.Fatalf("Extend: %+v %v (fence was %d)", e, err, l.Fence)
	}
	info, err := s.l.Inspect(s.ctx, k, api.ReadOptions{})
	if err != nil || len(info.Holders) != 1 || info.Holders[0].TTLMs < 10000 {
		s.t.Fatalf("after Extend: %+v %v", info, err)
	}
	_, err = s.l.Extend(s.ctx, api.ExtendRequest{Key: s.key("never"), Owner: s.owner("a"), TTLMs: 1000})
	if !errors.Is(err, api.ErrNotHeld) && !errors.Is(err, api.ErrNotOwner) {
		s.t.Fatalf("Extend of a free key: %v", err)
	}
}

func acquireWaitsFIFO(s *suite) {
	k := s.key("k")
	s.mustTry(k, s.owner("a"), 30*time.Second)
	b := async(func() (api.Lease, error) {
		return s.l.Acquire(s.ctx, api.AcquireRequest{Key: k, Owner: s.owner("b"), TTLMs: 30000, WaitMs: 20000})
	})
	s.queued(k, 1)
	c := async(func() (api.Lease, error) {
		return s.l.Acquire(s.ctx, api.AcquireRequest{Key: k, Owner: s.owner("c"), TTLMs: 30000, WaitMs: 20000})
	})
	s.queued(k, 2)
	s.mustRelease(k, s.owner("a"))
	rb := s.recv("first waiter", b)
	if rb.err != nil || rb.v.Owner != s.owner("b") {
		s.t.Fatalf("first waiter: %+v %v", rb.v, rb.err)
	}
	select {
	case r := <-c:
		s.t.Fatalf("second waiter granted while the first holds: %+v %v", r.v, r.err)
	default:
	}
	s.mustRelease(k, s.owner("b"))
	rc := s.recv("second waiter", c)
	if rc.err != nil || rc.v.Owner != s.owner("c") || rc.v.Fence <= rb.v.Fence {
		s.t.Fatalf("second waiter: %+v %v", rc.v, rc.err)
	}
}

func acquireWaitTimeout(s *suite) {
	k := s.key("k")
	s.mustTry(k, s.owner("a"), 30*time.Second)
	start := time.Now()
	_, err := s.l.Acquire(s.ctx, api.AcquireRequest{Key: k, Owner: s.owner("b"), TTLMs: 1000, WaitMs: 200})
	s.wantErr("Acquire with a short wait", err, api.ErrWaitTimeout)
	if time.Since(start) < 150*time.Millisecond {
		s.t.Fatalf("gave up after %v, before its wait", time.Since(start))
	}
	s.queued(k, 0)
}

func acquireCancelLeavesQueue(s *suite) {
	k := s.key("k")
	s.mustTry(k, s.owner("a"), 30*time.Second)
	ctx, cancel := context.WithCancel(s.ctx)
	b := async(func() (api.Lease, error) {
		return s.l.Acquire(ctx, api.AcquireRequest{Key: k, Owner: s.owner("b"), TTLMs: 30000, WaitMs: 20000})
	})
	s.queued(k, 1)
	cancel()
	r := s.recv("cancelled waiter", b)
	if r.err == nil || !(errors.Is(r.err, api.ErrCancelled) || errors.Is(r.err, context.Canceled)) {
		s.t.Fatalf("cancelled Acquire: %+v %v", r.v, r.err)
	}
	s.queued(k, 0)
	s.mustRelease(k, s.owner("a"))
	// The abandoned waiter was not granted: the lock is free.
	s.mustTry(k, s.owner("c"), 30*time.Second)
}

func leaseExpires(s *suite) {
	k := s.key("k")
	const ttl = 400 * time.Millisecond
	sent := time.Now()
	l := s.mustTry(k, s.owner("a"), ttl)
	var next api.Lease
	s.eventually("the lease to expire", func() bool {
		var err error
		next, err = s.try(k, s.owner("b"), 30*time.Second)
		// Lock time is kept in whole milliseconds (a grant is stamped
		// with the clock's millisecond, not its instant): a lease can end
		// up to 1 ms before send time + TTL, far inside a client's drift
		// margin.
		if err == nil && time.Since(sent) < ttl-time.Millisecond {
			s.t.Fatalf("lease ended after %v, before its TTL %v", time.Since(sent), ttl)
		}
		return err == nil
	})
	if next.Fence <= l.Fence {
		s.t.Fatalf("fence %d after an expired %d", next.Fence, l.Fence)
	}
	_, err := s.l.Extend(s.ctx, api.ExtendRequest{Key: k, Owner: s.owner("a"), TTLMs: 1000})
	s.wantErr("Extend of an expired hold", err, api.ErrNotOwner)
}

func multiKeyAllOrNothing(s *suite) {
	a, b := s.key("a"), s.key("b")
	s.mustTry(b, s.owner("x"), 30*time.Second)
	_, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Keys: []string{a, b}, Owner: s.owner("m"), TTLMs: 30000})
	s.wantErr("multi-lock with one key held", err, api.ErrLocked)
	// Nothing was taken.
	s.mustTry(a, s.owner("y"), 30*time.Second)
	s.mustRelease(a, s.owner("y"))
	s.mustRelease(b, s.owner("x"))
	l, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Keys: []string{a, b}, Owner: s.owner("m"), TTLMs: 30000})
	if err != nil || l.Fence == 0 {
		s.t.Fatalf("multi-lock: %+v %v", l, err)
	}
	for _, k := range []string{a, b} {
		_, err := s.try(k, s.owner("z"), time.Second)
		s.wantErr("key of a multi-lock", err, api.ErrLocked)
	}
	if r, err := s.l.Release(s.ctx, api.ReleaseRequest{Keys: []string{a, b}, Owner: s.owner("m")}); err != nil || !r.Released {
		s.t.Fatalf("multi release: %+v %v", r, err)
	}
	s.mustTry(a, s.owner("z"), time.Second)
	s.mustTry(b, s.owner("z"), time.Second)
}

func sharedAndSemaphore(s *suite) {
	rw := s.key("rw")
	for _, o := range []string{"r1", "r2"} {
		if _, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: rw, Owner: s.owner(o), TTLMs: 30000, Mode: api.ModeShared}); err != nil {
			s.t.Fatalf("shared %s: %v", o, err)
		}
	}
	_, err := s.try(rw, s.owner("w"), time.Second)
	s.wantErr("writer while readers hold", err, api.ErrLocked)

	sem := s.key("sem")
	for _, o := range []string{"p1", "p2"} {
		if _, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: sem, Owner: s.owner(o), TTLMs: 30000, Mode: api.ModeSemaphore, Permits: 2}); err != nil {
			s.t.Fatalf("permit %s: %v", o, err)
		}
	}
	_, err = s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: sem, Owner: s.owner("p3"), TTLMs: 30000, Mode: api.ModeSemaphore, Permits: 2})
	s.wantErr("third permit of two", err, api.ErrLocked)
	s.mustRelease(sem, s.owner("p1"))
	if _, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: sem, Owner: s.owner("p3"), TTLMs: 30000, Mode: api.ModeSemaphore, Permits: 2}); err != nil {
		s.t.Fatalf("permit after a release: %v", err)
	}
}

func reentrant(s *suite) {
	k := s.key("k")
	req := api.AcquireRequest{Key: k, Owner: s.owner("a"), TTLMs: 30000, Reentrant: true}
	l1, err := s.l.TryAcquire(s.ctx, req)
	if err != nil {
		s.t.Fatal(err)
	}
	l2, err := s.l.TryAcquire(s.ctx, req)
	if err != nil || l2.Count != 2 || l2.Fence != l1.Fence {
		s.t.Fatalf("reentrant acquire: %+v %v (first %+v)", l2, err, l1)
	}
	r, err := s.l.Release(s.ctx, api.ReleaseRequest{Key: k, Owner: s.owner("a"), Reentrant: true})
	if err != nil || r.Released || r.Count != 1 {
		s.t.Fatalf("first reentrant release: %+v %v", r, err)
	}
	_, err = s.try(k, s.owner("b"), time.Second)
	s.wantErr("still held once", err, api.ErrLocked)
	r, err = s.l.Release(s.ctx, api.ReleaseRequest{Key: k, Owner: s.owner("a"), Reentrant: true})
	if err != nil || !r.Released {
		s.t.Fatalf("last reentrant release: %+v %v", r, err)
	}
	s.mustTry(k, s.owner("b"), time.Second)
}

func sessionsReleaseHolds(s *suite) {
	sess, err := s.l.OpenSession(s.ctx, 30*time.Second)
	if err != nil || sess.ID == "" {
		s.t.Fatalf("OpenSession: %+v %v", sess, err)
	}
	if ka, err := s.l.KeepAlive(s.ctx, sess.ID); err != nil || ka.ID != sess.ID {
		s.t.Fatalf("KeepAlive: %+v %v", ka, err)
	}
	k := s.key("k")
	if _, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: k, Owner: s.owner("a"), TTLMs: 60000, Session: sess.ID}); err != nil {
		s.t.Fatal(err)
	}
	if err := s.l.CloseSession(s.ctx, sess.ID); err != nil {
		s.t.Fatal(err)
	}
	// Closing is immediate, and a clean close leaves no lock-delay.
	s.mustTry(k, s.owner("b"), time.Second)
	_, err = s.l.KeepAlive(s.ctx, sess.ID)
	s.wantErr("KeepAlive of a closed session", err, api.ErrSessionExpired)
	_, err = s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: s.key("k2"), Owner: s.owner("a"), TTLMs: 1000, Session: sess.ID})
	s.wantErr("acquire with a closed session", err, api.ErrSessionExpired)
}

func sessionExpires(s *suite) {
	const ttl = 400 * time.Millisecond
	sess, err := s.l.OpenSession(s.ctx, ttl)
	if err != nil {
		s.t.Fatal(err)
	}
	k := s.key("k")
	if _, err := s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: k, Owner: s.owner("a"), TTLMs: 60000, Session: sess.ID}); err != nil {
		s.t.Fatal(err)
	}
	s.eventually("the session's hold to end with it", func() bool {
		_, err := s.try(k, s.owner("b"), 30*time.Second)
		return err == nil
	})
	_, err = s.l.KeepAlive(s.ctx, sess.ID)
	s.wantErr("KeepAlive of an expired session", err, api.ErrSessionExpired)
}

func fenceCheck(s *suite) {
	res := s.key("resource")
	// Tokens are fences that were granted: the registry refuses others.
	var f []uint64
	for _, n := range []string{"f/1", "f/2", "f/3"} {
		f = append(f, s.mustTry(s.key(n), s.owner(n), 30*time.Second).Fence)
	}
	for _, c := range []struct {
		token   uint64
		ok      bool
		highest uint64
	}{{f[1], true, f[1]}, {f[1], true, f[1]}, {f[0], false, f[1]}, {f[2], true, f[2]}} {
		r, err := s.l.FenceCheck(s.ctx, res, c.token)
		if err != nil || r.OK != c.ok || r.Highest != c.highest {
			s.t.Fatalf("FenceCheck(%d) = %+v %v, want ok=%v highest=%d", c.token, r, err, c.ok, c.highest)
		}
	}
}

func inspectAndList(s *suite) {
	_, err := s.l.Inspect(s.ctx, s.key("none"), api.ReadOptions{})
	s.wantErr("Inspect of an unknown key", err, api.ErrNotFound)
	var fences []uint64
	for _, n := range []string{"p/1", "p/2", "p/3"} {
		fences = append(fences, s.mustTry(s.key(n), s.owner(n), 30*time.Second).Fence)
	}
	for _, stale := range []bool{false, true} {
		info, err := s.l.Inspect(s.ctx, s.key("p/2"), api.ReadOptions{Stale: stale})
		if stale && err != nil {
			continue // a stale read may lag on a follower
		}
		if err != nil || info.Key != s.key("p/2") || len(info.Holders) != 1 ||
			info.Holders[0].Owner != s.owner("p/2") || info.Holders[0].Fence != fences[1] || info.Fence < fences[1] {
			s.t.Fatalf("Inspect (stale=%v): %+v %v", stale, info, err)
		}
	}
	var keys []string
	req := api.ListRequest{Prefix: s.key("p/"), Limit: 2}
	for page := 0; ; page++ {
		res, err := s.l.List(s.ctx, req)
		if err != nil || len(res.Locks) > 2 || page > 3 {
			s.t.Fatalf("List page %d: %+v %v", page, res, err)
		}
		for _, l := range res.Locks {
			keys = append(keys, l.Key)
		}
		if res.Next == "" {
			break
		}
		req.After = res.Next
	}
	if len(keys) != 3 || keys[0] != s.key("p/1") || keys[2] != s.key("p/3") {
		s.t.Fatalf("List: %q", keys)
	}
}

func requestIDExactlyOnce(s *suite) {
	k := s.key("k")
	req := api.AcquireRequest{Key: k, Owner: s.owner("a"), TTLMs: 30000, RequestID: "req-" + s.id + "-1"}
	l1, err := s.l.TryAcquire(s.ctx, req)
	if err != nil {
		s.t.Fatal(err)
	}
	l2, err := s.l.TryAcquire(s.ctx, req)
	if err != nil || l2.Fence != l1.Fence {
		s.t.Fatalf("repeated acquire: %+v %v, first %+v", l2, err, l1)
	}
	rel := api.ReleaseRequest{Key: k, Owner: s.owner("a"), RequestID: "req-" + s.id + "-2"}
	for i := range 2 {
		if r, err := s.l.Release(s.ctx, rel); err != nil || !r.Released {
			s.t.Fatalf("release %d: %+v %v", i, r, err)
		}
	}
	// The repeated release did not touch the next holder.
	s.mustTry(k, s.owner("b"), 30*time.Second)
	if r, err := s.l.Release(s.ctx, rel); err != nil || !r.Released {
		s.t.Fatalf("replayed release: %+v %v", r, err)
	}
	_, err = s.try(k, s.owner("c"), time.Second)
	s.wantErr("the replay released b's hold", err, api.ErrLocked)
}

func election(s *suite) {
	sess, err := s.l.OpenSession(s.ctx, 30*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer s.l.CloseSession(context.Background(), sess.ID)
	name := "locktest-" + s.id
	octx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	obs, err := s.l.Observe(octx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	ld, err := s.l.Campaign(s.ctx, api.CampaignRequest{Election: name, Value: "v1", Session: sess.ID})
	if err != nil || ld.Value != "v1" || ld.Fence == 0 {
		s.t.Fatalf("Campaign: %+v %v", ld, err)
	}
	next := func(want string) {
		s.t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-obs:
				if !ok {
					s.t.Fatal("Observe closed early")
				}
				if l.Value == want {
					return
				}
			case <-deadline:
				s.t.Fatalf("Observe never showed %q", want)
			}
		}
	}
	next("v1")
	second := async(func() (api.Leader, error) {
		return s.l.Campaign(s.ctx, api.CampaignRequest{Election: name, Value: "v2", Session: sess.ID})
	})
	select {
	case r := <-second:
		s.t.Fatalf("second campaign won while v1 leads: %+v %v", r.v, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	err = s.l.Resign(s.ctx, ld)
	if err != nil {
		s.t.Fatal(err)
	}
	var r result[api.Leader]
	select {
	case r = <-second:
	case <-time.After(15 * time.Second):
		s.t.Fatal("second campaign never won")
	}
	if r.err != nil || r.v.Value != "v2" || r.v.Fence <= ld.Fence {
		s.t.Fatalf("second campaign: %+v %v", r.v, r.err)
	}
	next("v2")
	cancel()
	for range obs { // closed once its context ends
	}
}

// electionSameValue: campaigns with the same value are distinct
// candidates. While one leads, another (other session, same value) waits;
// when the leader's session expires exactly one of the waiting ones leads.
func electionSameValue(s *suite) {
	name := "locktest-same-" + s.id
	short, err := s.l.OpenSession(s.ctx, 400*time.Millisecond)
	if err != nil {
		s.t.Fatal(err)
	}
	var long [2]api.SessionInfo
	for i := range long {
		if long[i], err = s.l.OpenSession(s.ctx, 30*time.Second); err != nil {
			s.t.Fatal(err)
		}
		defer s.l.CloseSession(context.Background(), long[i].ID)
	}
	first, err := s.l.Campaign(s.ctx, api.CampaignRequest{Election: name, Value: "same", Session: short.ID})
	if err != nil || first.Token == "" || first.Fence == 0 {
		s.t.Fatalf("first campaign: %+v %v", first, err)
	}
	cctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var waiting [2]<-chan result[api.Leader]
	for i := range waiting {
		sid := long[i].ID
		waiting[i] = async(func() (api.Leader, error) {
			return s.l.Campaign(cctx, api.CampaignRequest{Election: name, Value: "same", Session: sid})
		})
	}
	// Neither may lead while the first does: the one that leads first has
	// a grant of its own, after the first's session expired (it is not
	// kept alive), with a higher fence.
	// The first session expires: one of the others leads, the other waits.
	var won result[api.Leader]
	var other <-chan result[api.Leader]
	select {
	case won = <-waiting[0]:
		other = waiting[1]
	case won = <-waiting[1]:
		other = waiting[0]
	case <-time.After(15 * time.Second):
		s.t.Fatal("no campaign led after the leader's session expired")
	}
	if won.err != nil || won.v.Fence <= first.Fence || won.v.Token == first.Token {
		s.t.Fatalf("campaign after expiry: %+v %v", won.v, won.err)
	}
	select {
	case r := <-other:
		s.t.Fatalf("two campaigns lead at once: %+v and %+v %v", won.v, r.v, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	// The first's leadership is over: its token resigns nothing.
	err = s.l.Resign(s.ctx, first)
	if !errors.Is(err, api.ErrNotOwner) && !errors.Is(err, api.ErrNotHeld) {
		s.t.Fatalf("resign of the expired leadership: %v, want ErrNotOwner or ErrNotHeld", err)
	}
	if err := s.l.Resign(s.ctx, won.v); err != nil {
		s.t.Fatal(err)
	}
	select {
	case r := <-other:
		if r.err != nil || r.v.Fence <= won.v.Fence {
			s.t.Fatalf("last campaign: %+v %v", r.v, r.err)
		}
		if err := s.l.Resign(s.ctx, r.v); err != nil {
			s.t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		s.t.Fatal("the last campaign never led after the resign")
	}
}

// electionNeedsToken: the public value does not resign or proclaim;
// the leadership Campaign returned does, and Proclaim keeps the fence.
func electionNeedsToken(s *suite) {
	name := "locktest-token-" + s.id
	sess, err := s.l.OpenSession(s.ctx, 30*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer s.l.CloseSession(context.Background(), sess.ID)
	octx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	obs, err := s.l.Observe(octx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	ld, err := s.l.Campaign(s.ctx, api.CampaignRequest{Election: name, Value: "v1", Session: sess.ID})
	if err != nil || ld.Token == "" {
		s.t.Fatalf("Campaign: %+v %v", ld, err)
	}
	want := func(value string, fence uint64) {
		s.t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-obs:
				if !ok {
					s.t.Fatal("Observe closed early")
				}
				if l.Token != "" {
					s.t.Fatalf("Observe shows the campaign's token: %+v", l)
				}
				if l.Value == value && l.Fence == fence {
					return
				}
			case <-deadline:
				s.t.Fatalf("Observe never showed %q at fence %d", value, fence)
			}
		}
	}
	want("v1", ld.Fence)
	public := api.Leader{Election: name, Value: "v1", Fence: ld.Fence}
	forged := public
	forged.Token = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		what string
		ld   api.Leader
	}{{"the published value", public}, {"a forged token", forged}} {
		s.wantErr("Resign with "+tc.what, s.l.Resign(s.ctx, tc.ld), api.ErrNotOwner)
		_, err := s.l.Proclaim(s.ctx, tc.ld, "evil")
		s.wantErr("Proclaim with "+tc.what, err, api.ErrNotOwner)
	}
	p, err := s.l.Proclaim(s.ctx, ld, "v2")
	if err != nil || p.Value != "v2" || p.Fence != ld.Fence || p.Token != ld.Token {
		s.t.Fatalf("Proclaim: %+v %v (leader %+v)", p, err, ld)
	}
	want("v2", ld.Fence)
	s.wantErr("Resign with the value before Proclaim", s.l.Resign(s.ctx, ld), api.ErrNotOwner)
	if err := s.l.Resign(s.ctx, p); err != nil {
		s.t.Fatal(err)
	}
	want("", 0)
}

func status(s *suite) {
	st, err := s.l.Status(s.ctx)
	if err != nil || st.ID == "" || st.Leader == "" || len(st.Members) == 0 {
		s.t.Fatalf("Status: %+v %v", st, err)
	}
}

func badInput(s *suite) {
	for _, req := range []api.AcquireRequest{
		{Key: s.key("k"), TTLMs: 1000},                              // no owner
		{Owner: s.owner("a"), TTLMs: 1000},                          // no key
		{Key: s.key("k"), Owner: s.owner("a")},                      // no ttl
		{Key: s.key("k"), Owner: s.owner("a"), TTLMs: -5},           // negative ttl
		{Key: s.key("k"), Owner: s.owner("a"), TTLMs: 1, Mode: "x"}, // unknown mode
	} {
		_, err := s.l.TryAcquire(s.ctx, req)
		s.wantErr("TryAcquire "+describe(req), err, api.ErrBadRequest)
	}
	_, err := s.l.Inspect(s.ctx, s.key("k"), api.ReadOptions{})
	s.wantErr("bad input created the key", err, api.ErrNotFound)
}

func describe(r api.AcquireRequest) string {
	return "key=" + r.Key + " owner=" + r.Owner + " mode=" + r.Mode
}
