package httpapi_test

import (
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/locktest"
	"github.com/locknode/locknode/wire"
)

// TestLimits: the shared limits cases (locktest.RequestCases) over HTTP:
// each is answered 400 with the case's code and a message naming the
// field, the value and the limit, before the Locker is called; the key
// stays absent. Then the fence registry: a token above the highest fence
// granted is 400 and changes nothing.
func TestLimits(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	const key, owner = "lim", "o"
	codes := map[error]string{api.ErrLimit: api.CodeLimit, api.ErrBadRequest: api.CodeBadRequest}
	for _, c := range locktest.RequestCases(key, owner) {
		t.Run(c.Name, func(t *testing.T) {
			var path string
			var body any
			switch {
			case c.Acquire != nil && c.Wait:
				path, body = wire.PathAcquire, c.Acquire
			case c.Acquire != nil:
				path, body = wire.PathTry, c.Acquire
			case c.Extend != nil:
				path, body = wire.PathExtend, c.Extend
			case c.Release != nil:
				path, body = wire.PathRelease, c.Release
			case c.Session != nil:
				path, body = wire.PathSessions, c.Session
			}
			st, eb := call(t, srv, "POST", path, body, nil)
			if st != 400 || eb.Code != codes[c.Want] || !strings.Contains(eb.Message, c.Mention) {
				t.Fatalf("POST %s: %d %+v, want 400 %s saying %q", path, st, eb, codes[c.Want], c.Mention)
			}
		})
	}
	for _, m := range []string{"Acquire", "TryAcquire", "Release", "Extend", "OpenSession"} {
		if n := fake.Calls(m); n != 0 {
			t.Errorf("the Locker's %s was called %d times", m, n)
		}
	}
	if st, _ := call(t, srv, "GET", wire.PathLockPrefix+key, nil, nil); st != 404 {
		t.Fatalf("inspect %s after refusals: %d", key, st)
	}

	var l api.Lease
	if st, eb := call(t, srv, "POST", wire.PathTry, api.AcquireRequest{Key: key, Owner: owner, TTLMs: api.DefaultMaxTTLMs}, &l); st != 200 || l.TTLMs != api.DefaultMaxTTLMs {
		t.Fatalf("lease of the longest TTL: %d %+v %+v", st, eb, l)
	}
	for _, tok := range []uint64{l.Fence + 1, 18446744073709551615} {
		st, eb := call(t, srv, "POST", wire.PathFenceCheck, api.FenceCheckRequest{Resource: "db", Token: tok}, nil)
		if st != 400 || eb.Code != api.CodeBadRequest || !strings.Contains(eb.Message, "above the highest fence") {
			t.Fatalf("fence check %d: %d %+v", tok, st, eb)
		}
	}
	var fr api.FenceResult
	if st, _ := call(t, srv, "POST", wire.PathFenceCheck, api.FenceCheckRequest{Resource: "db", Token: l.Fence}, &fr); st != 200 || !fr.OK || fr.Highest != l.Fence {
		t.Fatalf("fence check with the granted fence: %d %+v", st, fr)
	}
}
