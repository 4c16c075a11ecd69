package locktest

import (
	"math"
	"strings"
	"time"

	"github.com/locknode/locknode/api"
)

// RequestCase is a request every front end refuses, under api.DefaultLimits,
// with Want (errors.Is) and a message containing Mention, changing
// nothing. Exactly one of Acquire, Extend, Release and Session is set.
type RequestCase struct {
	Name    string
	Acquire *api.AcquireRequest
	Wait    bool // send Acquire as a blocking acquire (else TryAcquire)
	Extend  *api.ExtendRequest
	Release *api.ReleaseRequest
	Session *api.SessionRequest // OpenSession(TTLMs ms)
	Want    error
	Mention string
}

// RequestCases returns the shared cases of the limits tests, on key and
// owner. The RESP bridge's table has the same cases in its own syntax.
func RequestCases(key, owner string) []RequestCase {
	acq := func(f func(r *api.AcquireRequest)) *api.AcquireRequest {
		r := &api.AcquireRequest{Key: key, Owner: owner, TTLMs: 1000}
		f(r)
		return r
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	maxTTL := int64(api.DefaultMaxTTLMs)
	return []RequestCase{
		{Name: "ttl 0", Acquire: acq(func(r *api.AcquireRequest) { r.TTLMs = 0 }), Want: api.ErrBadRequest, Mention: "ttl_ms 0"},
		{Name: "ttl negative", Acquire: acq(func(r *api.AcquireRequest) { r.TTLMs = -5 }), Want: api.ErrBadRequest, Mention: "ttl_ms -5"},
		{Name: "ttl above max", Acquire: acq(func(r *api.AcquireRequest) { r.TTLMs = 172800000 }), Want: api.ErrLimit,
			Mention: "ttl_ms 172800000 ms is over the limit of 86400000 ms"},
		{Name: "ttl huge", Acquire: acq(func(r *api.AcquireRequest) { r.TTLMs = math.MaxInt64 }), Want: api.ErrLimit, Mention: "ttl_ms 9223372036854775807"},
		{Name: "wait overflow", Acquire: acq(func(r *api.AcquireRequest) { r.WaitMs = 18446744073710 }), Wait: true, Want: api.ErrLimit,
			Mention: "wait_ms 18446744073710 ms is over the limit"},
		{Name: "wait above max", Acquire: acq(func(r *api.AcquireRequest) { r.WaitMs = maxTTL + 1 }), Wait: true, Want: api.ErrLimit, Mention: "wait_ms"},
		{Name: "wait negative", Acquire: acq(func(r *api.AcquireRequest) { r.WaitMs = -1 }), Wait: true, Want: api.ErrBadRequest, Mention: "wait_ms -1"},
		{Name: "permits 2^40", Acquire: acq(func(r *api.AcquireRequest) { r.Mode, r.Permits = api.ModeSemaphore, 1<<40 }), Want: api.ErrLimit,
			Mention: "permits 1099511627776 is over the limit of 10000"},
		{Name: "permits 0", Acquire: acq(func(r *api.AcquireRequest) { r.Mode = api.ModeSemaphore }), Want: api.ErrBadRequest, Mention: "permits"},
		{Name: "permits negative", Acquire: acq(func(r *api.AcquireRequest) { r.Mode, r.Permits = api.ModeSemaphore, -3 }), Want: api.ErrBadRequest, Mention: "permits -3"},
		{Name: "lock-delay above max", Acquire: acq(func(r *api.AcquireRequest) { r.LockDelay = maxTTL + 1 }), Want: api.ErrLimit, Mention: "lock_delay_ms"},
		{Name: "max hold above max", Acquire: acq(func(r *api.AcquireRequest) { r.MaxHoldMs = math.MaxInt64 }), Want: api.ErrLimit, Mention: "max_hold_ms"},
		{Name: "key oversized", Acquire: acq(func(r *api.AcquireRequest) { r.Key = long(api.DefaultMaxKeyBytes + 1) }), Want: api.ErrLimit,
			Mention: "key of 513 bytes is over the limit of 512 bytes"},
		{Name: "owner oversized", Acquire: acq(func(r *api.AcquireRequest) { r.Owner = long(api.DefaultMaxOwnerBytes + 1) }), Want: api.ErrLimit,
			Mention: "owner of 257 bytes is over the limit of 256 bytes"},
		{Name: "no owner", Acquire: acq(func(r *api.AcquireRequest) { r.Owner = "" }), Want: api.ErrBadRequest, Mention: "owner"},
		{Name: "no key", Acquire: acq(func(r *api.AcquireRequest) { r.Key = "" }), Want: api.ErrBadRequest, Mention: "key"},
		{Name: "unknown mode", Acquire: acq(func(r *api.AcquireRequest) { r.Mode = "x" }), Want: api.ErrBadRequest, Mention: "mode"},
		{Name: "extend ttl above max", Extend: &api.ExtendRequest{Key: key, Owner: owner, TTLMs: maxTTL + 1}, Want: api.ErrLimit, Mention: "ttl_ms 86400001"},
		{Name: "extend ttl 0", Extend: &api.ExtendRequest{Key: key, Owner: owner}, Want: api.ErrBadRequest, Mention: "ttl_ms 0"},
		{Name: "extend owner oversized", Extend: &api.ExtendRequest{Key: key, Owner: long(257), TTLMs: 1000}, Want: api.ErrLimit, Mention: "owner"},
		{Name: "release key oversized", Release: &api.ReleaseRequest{Key: long(513), Owner: owner}, Want: api.ErrLimit, Mention: "key of 513 bytes"},
		{Name: "release no owner", Release: &api.ReleaseRequest{Key: key}, Want: api.ErrBadRequest, Mention: "owner"},
		{Name: "session ttl above max", Session: &api.SessionRequest{TTLMs: maxTTL + 1}, Want: api.ErrLimit, Mention: "ttl_ms 86400001"},
		{Name: "session ttl 0", Session: &api.SessionRequest{}, Want: api.ErrBadRequest, Mention: "ttl_ms 0"},
	}
}

// badLimits runs RequestCases against the Locker: each is refused with its
// error and leaves the key absent; a lease of exactly the longest TTL is
// granted; the fence registry refuses tokens above the highest fence.
func badLimits(s *suite) {
	key, owner := s.key("lim"), s.owner("a")
	for _, c := range RequestCases(key, owner) {
		var err error
		switch {
		case c.Acquire != nil && c.Wait:
			_, err = s.l.Acquire(s.ctx, *c.Acquire)
		case c.Acquire != nil:
			_, err = s.l.TryAcquire(s.ctx, *c.Acquire)
		case c.Extend != nil:
			_, err = s.l.Extend(s.ctx, *c.Extend)
		case c.Release != nil:
			_, err = s.l.Release(s.ctx, *c.Release)
		case c.Session != nil:
			_, err = s.l.OpenSession(s.ctx, time.Duration(c.Session.TTLMs)*time.Millisecond)
		}
		s.wantErr(c.Name, err, c.Want)
		if !strings.Contains(err.Error(), c.Mention) {
			s.t.Fatalf("%s: error %q does not say %q", c.Name, err, c.Mention)
		}
	}
	_, err := s.l.Inspect(s.ctx, key, api.ReadOptions{})
	s.wantErr("refused requests created the key", err, api.ErrNotFound)

	l := s.mustTry(key, owner, time.Duration(api.DefaultMaxTTLMs)*time.Millisecond)
	if l.TTLMs != api.DefaultMaxTTLMs {
		s.t.Fatalf("lease of the longest TTL: %+v", l)
	}
	res := s.key("fenced")
	for _, tok := range []uint64{l.Fence + 1<<40, math.MaxUint64} {
		_, err := s.l.FenceCheck(s.ctx, res, tok)
		s.wantErr("fence check above the highest fence", err, api.ErrBadRequest)
	}
	if r, err := s.l.FenceCheck(s.ctx, res, l.Fence); err != nil || !r.OK || r.Highest != l.Fence {
		s.t.Fatalf("fence check with the granted fence after refused ones: %+v %v", r, err)
	}
	s.mustRelease(key, owner)
}
