package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// call sends a JSON body (a string is sent verbatim) and decodes the answer
// into out when it is 2xx, or returns the error body.
func call(t *testing.T, srv *httptest.Server, method, path string, body any, out any) (int, api.ErrorBody) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(raw, &eb); err != nil {
			t.Fatalf("%s %s: status %d with a non-JSON body %q", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, eb
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, eb
}

func newServer(t *testing.T, l api.Locker, cfg httpapi.Config) *httptest.Server {
	srv := httptest.NewServer(httpapi.New(l, cfg))
	t.Cleanup(srv.Close)
	return srv
}

func TestRoutesEndToEnd(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "locknode_up 1\n") }),
		Extra:   func(st *api.Status) { st.HTTPAddr = "http-here" },
	})

	var sess api.SessionInfo
	if st, eb := call(t, srv, "POST", "/v1/sessions", wire.SessionRequest{TTLMs: 60000}, &sess); st != 200 || sess.ID == "" {
		t.Fatalf("open session: %d %+v %+v", st, eb, sess)
	}
	for _, m := range []string{"PUT", "POST"} {
		var ka api.SessionInfo
		if st, eb := call(t, srv, m, "/v1/sessions/"+sess.ID+"/keepalive", nil, &ka); st != 200 || ka.ID != sess.ID {
			t.Fatalf("%s keepalive: %d %+v", m, st, eb)
		}
	}

	var lease api.Lease
	key := "jobs/a b%2F/ü"
	st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Key: key, Owner: "o1", TTLMs: 60000, Session: sess.ID, RequestID: "r1"}, &lease)
	if st != 200 || lease.Fence == 0 || lease.Owner != "o1" {
		t.Fatalf("acquire: %d %+v %+v", st, eb, lease)
	}
	if st, eb := call(t, srv, "POST", "/v1/locks/try", api.AcquireRequest{Key: key, Owner: "o2", TTLMs: 1000}, nil); st != 423 || eb.Code != api.CodeLocked {
		t.Fatalf("try on a held lock: %d %+v", st, eb)
	}
	var info api.LockInfo
	if st, eb := call(t, srv, "GET", "/v1/locks/"+url.PathEscape(key)+"?stale=true", nil, &info); st != 200 || info.Key != key || len(info.Holders) != 1 || info.Holders[0].Owner != "o1" {
		t.Fatalf("inspect: %d %+v %+v", st, eb, info)
	}
	if st, eb := call(t, srv, "GET", "/v1/locks/nope", nil, nil); st != 404 || eb.Code != api.CodeNotFound {
		t.Fatalf("inspect unknown: %d %+v", st, eb)
	}
	var multi api.Lease
	if st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Keys: []string{"m/1", "m/2"}, Owner: "o1", TTLMs: 60000}, &multi); st != 200 || len(multi.Keys) != 2 {
		t.Fatalf("multi acquire: %d %+v %+v", st, eb, multi)
	}
	var list api.ListResult
	if st, eb := call(t, srv, "GET", "/v1/locks?prefix=m/&limit=1", nil, &list); st != 200 || len(list.Locks) != 1 || list.Locks[0].Key != "m/1" || list.Next != "m/1" {
		t.Fatalf("list page 1: %d %+v %+v", st, eb, list)
	}
	if st, eb := call(t, srv, "GET", "/v1/locks?prefix=m/&limit=1&after=m/1", nil, &list); st != 200 || len(list.Locks) != 1 || list.Locks[0].Key != "m/2" {
		t.Fatalf("list page 2: %d %+v %+v", st, eb, list)
	}
	// The hold is bound to the 60s session: extending it renews the
	// session, so the lease runs for the session's TTL, not the 30s asked.
	var ext api.Lease
	if st, eb := call(t, srv, "POST", "/v1/locks/extend", api.ExtendRequest{Key: key, Owner: "o1", TTLMs: 30000}, &ext); st != 200 || ext.Fence != lease.Fence || ext.TTLMs != 60000 {
		t.Fatalf("extend: %d %+v %+v", st, eb, ext)
	}
	if st, eb := call(t, srv, "POST", "/v1/locks/extend", api.ExtendRequest{Key: key, Owner: "o2", TTLMs: 30000}, nil); st != 409 || eb.Code != api.CodeNotOwner {
		t.Fatalf("stranger extends: %d %+v", st, eb)
	}
	if st, eb := call(t, srv, "POST", "/v1/locks/release", api.ReleaseRequest{Key: key, Owner: "o2"}, nil); st != 409 || eb.Code != api.CodeNotOwner {
		t.Fatalf("stranger releases: %d %+v", st, eb)
	}
	var rel api.ReleaseResult
	if st, eb := call(t, srv, "POST", "/v1/locks/release", api.ReleaseRequest{Key: key, Owner: "o1"}, &rel); st != 200 || !rel.Released {
		t.Fatalf("release: %d %+v %+v", st, eb, rel)
	}
	if st, eb := call(t, srv, "POST", "/v1/locks/release", api.ReleaseRequest{Key: key, Owner: "o1"}, nil); st != 404 || eb.Code != api.CodeNotHeld {
		t.Fatalf("release again: %d %+v", st, eb)
	}

	var fr api.FenceResult
	if st, _ := call(t, srv, "POST", "/v1/fence/check", wire.FenceCheckRequest{Resource: "db", Token: 2}, &fr); st != 200 || !fr.OK || fr.Highest != 2 {
		t.Fatalf("fence check 2: %d %+v", st, fr)
	}
	if st, _ := call(t, srv, "POST", "/v1/fence/check", wire.FenceCheckRequest{Resource: "db", Token: 1}, &fr); st != 200 || fr.OK || fr.Highest != 2 {
		t.Fatalf("fence check 1: %d %+v", st, fr)
	}

	var ld api.Leader
	if st, eb := call(t, srv, "POST", "/v1/elections/e1/campaign", wire.CampaignRequest{Value: "me", Session: sess.ID}, &ld); st != 200 || ld.Value != "me" || ld.Election != "e1" {
		t.Fatalf("campaign: %d %+v %+v", st, eb, ld)
	}
	if ld.Token == "" {
		t.Fatalf("campaign answered no token: %+v", ld)
	}
	if st, eb := call(t, srv, "POST", "/v1/elections/e1/resign", wire.ResignRequest{Value: "other", Token: ld.Token}, nil); st != 409 || eb.Code != api.CodeNotOwner {
		t.Fatalf("resign by stranger: %d %+v", st, eb)
	}
	if st, eb := call(t, srv, "POST", "/v1/elections/e1/resign", wire.ResignRequest{Value: "me"}, nil); st != 409 || eb.Code != api.CodeNotOwner {
		t.Fatalf("resign without the token: %d %+v", st, eb)
	}
	var pl api.Leader
	if st, eb := call(t, srv, "POST", "/v1/elections/e1/proclaim", wire.ProclaimRequest{Value: "me", Token: ld.Token, NewValue: "me2"}, &pl); st != 200 || pl.Value != "me2" || pl.Fence != ld.Fence {
		t.Fatalf("proclaim: %d %+v %+v", st, eb, pl)
	}
	if st, eb := call(t, srv, "POST", "/v1/elections/e1/resign", wire.ResignRequest{Value: "me2", Token: ld.Token}, nil); st != 204 {
		t.Fatalf("resign: %d %+v", st, eb)
	}

	var status api.Status
	if st, eb := call(t, srv, "GET", "/v1/status", nil, &status); st != 200 || status.ID != "fake" || status.HTTPAddr != "http-here" || len(status.Members) != 1 {
		t.Fatalf("status: %d %+v %+v", st, eb, status)
	}
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "locknode_up 1\n" {
		t.Fatalf("metrics: %d %q", resp.StatusCode, body)
	}

	if st, eb := call(t, srv, "DELETE", "/v1/sessions/"+sess.ID, nil, nil); st != 204 {
		t.Fatalf("close session: %d %+v", st, eb)
	}
	if st, eb := call(t, srv, "DELETE", "/v1/sessions/"+sess.ID, nil, nil); st != 410 || eb.Code != api.CodeSessionExpired {
		t.Fatalf("close session again: %d %+v", st, eb)
	}
	if st, eb := call(t, srv, "GET", "/v1/nothing", nil, nil); st != 404 || eb.Code != api.CodeNotFound {
		t.Fatalf("unknown route: %d %+v", st, eb)
	}
	if _, _, ok := fake.Holder("m/1"); !ok {
		t.Fatal("the multi-lock should still be held (no session)")
	}
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{api.ErrLocked, 423, api.CodeLocked},
		{api.ErrLockDelay, 423, api.CodeLockDelay},
		{api.ErrNotOwner, 409, api.CodeNotOwner},
		{api.ErrStaleFence, 409, api.CodeStaleFence},
		{api.ErrConflict, 409, api.CodeConflict},
		{api.ErrNotHeld, 404, api.CodeNotHeld},
		{api.ErrNotFound, 404, api.CodeNotFound},
		{api.ErrWaitTimeout, 408, api.CodeWaitTimeout},
		{api.ErrCancelled, 408, api.CodeCancelled},
		{api.ErrNoLeader, 503, api.CodeNoLeader},
		{api.ErrSessionExpired, 410, api.CodeSessionExpired},
		{api.ErrBadRequest, 400, api.CodeBadRequest},
		{api.ErrLimit, 400, api.CodeLimit},
		{api.ErrOutOfMemory, 507, api.CodeOutOfMemory},
		{errors.New("disk on fire"), 500, api.CodeInternal},
	}
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	routes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/locks/acquire", api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000, WaitMs: 10}},
		{"POST", "/v1/locks/try", api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000}},
		{"POST", "/v1/locks/release", api.ReleaseRequest{Key: "k", Owner: "o"}},
		{"POST", "/v1/locks/extend", api.ExtendRequest{Key: "k", Owner: "o", TTLMs: 1000}},
		{"GET", "/v1/locks/k", nil},
		{"GET", "/v1/locks", nil},
		{"POST", "/v1/sessions", wire.SessionRequest{TTLMs: 1000}},
		{"PUT", "/v1/sessions/s/keepalive", nil},
		{"DELETE", "/v1/sessions/s", nil},
		{"POST", "/v1/elections/e/campaign", wire.CampaignRequest{Value: "v", Session: "s"}},
		{"POST", "/v1/elections/e/resign", wire.ResignRequest{Value: "v", Token: "t"}},
		{"POST", "/v1/elections/e/proclaim", wire.ProclaimRequest{Value: "v", Token: "t", NewValue: "w"}},
		{"GET", "/v1/elections/e/observe", nil},
		{"POST", "/v1/fence/check", wire.FenceCheckRequest{Resource: "r", Token: 1}},
		{"GET", "/v1/status", nil},
		{"POST", "/v1/members", wire.MemberRequest{ID: "n", Address: "a:1"}},
		{"DELETE", "/v1/members/n", nil},
	}
	for _, c := range cases {
		t.Run(c.code+"/"+c.err.Error(), func(t *testing.T) {
			fake.Fail(fmt.Errorf("wrapped: %w", c.err))
			defer fake.Fail(nil)
			for _, r := range routes {
				st, eb := call(t, srv, r.method, r.path, r.body, nil)
				if st != c.status || eb.Code != c.code || !strings.Contains(eb.Message, api.ClientText(c.err)) {
					t.Errorf("%s %s: got %d %+v, want %d %s", r.method, r.path, st, eb, c.status, c.code)
				}
				checkClientText(t, r.method+" "+r.path, eb.Message)
			}
			if got := wire.ErrorOf(c.code); c.code != api.CodeInternal && got == nil {
				t.Errorf("ErrorOf(%q) = nil", c.code)
			}
			// The client maps the code back to a sentinel the server maps
			// to the same status and code: the table round-trips.
			if back := wire.ErrorOf(c.code); back != nil {
				if st, code := wire.StatusOf(back); st != c.status || code != c.code {
					t.Errorf("round trip of %q: %d %s", c.code, st, code)
				}
			}
		})
	}
}

func TestBadInputIsRefusedBeforeTheLocker(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{MaxBodyBytes: 256}) // an oversized body: TestBodyOverTheLimitIs413
	cases := []struct {
		name, method, path, body string
		code                     string
	}{
		{"garbage", "POST", "/v1/locks/acquire", `{not json`, api.CodeBadRequest},
		{"empty body", "POST", "/v1/locks/acquire", ``, api.CodeBadRequest},
		{"array", "POST", "/v1/locks/acquire", `[1,2]`, api.CodeBadRequest},
		{"unknown field", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":1000,"ttl":5}`, api.CodeBadRequest},
		{"trailing data", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":1000}{}`, api.CodeBadRequest},
		{"wrong type", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":"10s"}`, api.CodeBadRequest},
		{"missing key", "POST", "/v1/locks/acquire", `{"owner":"o","ttl_ms":1000}`, api.CodeBadRequest},
		{"key and keys", "POST", "/v1/locks/acquire", `{"key":"k","keys":["a"],"owner":"o","ttl_ms":1000}`, api.CodeBadRequest},
		{"duplicate keys", "POST", "/v1/locks/acquire", `{"keys":["a","a"],"owner":"o","ttl_ms":1000}`, api.CodeBadRequest},
		{"empty key in keys", "POST", "/v1/locks/try", `{"keys":["a",""],"owner":"o","ttl_ms":1000}`, api.CodeBadRequest},
		{"missing owner", "POST", "/v1/locks/try", `{"key":"k","ttl_ms":1000}`, api.CodeBadRequest},
		{"zero ttl", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o"}`, api.CodeBadRequest},
		{"negative ttl", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":-5}`, api.CodeBadRequest},
		{"negative wait", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":5,"wait_ms":-1}`, api.CodeBadRequest},
		{"bad mode", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":5,"mode":"sideways"}`, api.CodeBadRequest},
		{"semaphore without permits", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":5,"mode":"semaphore"}`, api.CodeBadRequest},
		{"release without owner", "POST", "/v1/locks/release", `{"key":"k"}`, api.CodeBadRequest},
		{"extend zero ttl", "POST", "/v1/locks/extend", `{"key":"k","owner":"o"}`, api.CodeBadRequest},
		{"extend no owner", "POST", "/v1/locks/extend", `{"key":"k","ttl_ms":5}`, api.CodeBadRequest},
		{"session zero ttl", "POST", "/v1/sessions", `{}`, api.CodeBadRequest},
		{"session unknown field", "POST", "/v1/sessions", `{"ttl":"5s"}`, api.CodeBadRequest},
		{"campaign no session", "POST", "/v1/elections/e/campaign", `{"value":"v"}`, api.CodeBadRequest},
		{"resign no value", "POST", "/v1/elections/e/resign", `{}`, api.CodeBadRequest},
		{"fence no resource", "POST", "/v1/fence/check", `{"token":3}`, api.CodeBadRequest},
		{"fence negative token", "POST", "/v1/fence/check", `{"resource":"r","token":-3}`, api.CodeBadRequest},
		{"fence token past uint64", "POST", "/v1/fence/check", `{"resource":"r","token":18446744073709551616}`, api.CodeBadRequest},
		{"ttl past int64", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":9223372036854775808}`, api.CodeBadRequest},
		{"ttl not a number", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":"10s"}`, api.CodeBadRequest},
		{"ttl float", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":1e30}`, api.CodeBadRequest},
		{"session ttl over max", "POST", "/v1/sessions", `{"ttl_ms":86400001}`, api.CodeLimit},
		{"list bad limit", "GET", "/v1/locks?limit=ten", ``, api.CodeBadRequest},
		{"list negative limit", "GET", "/v1/locks?limit=-1", ``, api.CodeBadRequest},
		{"list huge limit", "GET", "/v1/locks?limit=10001", ``, api.CodeLimit},
		{"inspect bad stale", "GET", "/v1/locks/k?stale=maybe", ``, api.CodeBadRequest},
		{"meta not strings", "POST", "/v1/locks/acquire", `{"key":"k","owner":"o","ttl_ms":5,"meta":{"pid":7}}`, api.CodeBadRequest},
		{"meta not an object", "POST", "/v1/locks/try", `{"key":"k","owner":"o","ttl_ms":5,"meta":["a"]}`, api.CodeBadRequest},
		{"meta empty name", "POST", "/v1/locks/try", `{"key":"k","owner":"o","ttl_ms":5,"meta":{"":"v"}}`, api.CodeBadRequest},
		{"meta misspelt", "POST", "/v1/locks/try", `{"key":"k","owner":"o","ttl_ms":5,"metadata":{"a":"v"}}`, api.CodeBadRequest},
		{"meta too many entries", "POST", "/v1/locks/try", `{"key":"k","owner":"o","ttl_ms":5,"meta":{` +
			`"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":""}}`, api.CodeLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, eb := call(t, srv, c.method, c.path, c.body, nil)
			if st != 400 || eb.Code != c.code || eb.Message == "" {
				t.Fatalf("got %d %+v, want 400 %s", st, eb, c.code)
			}
		})
	}
	for _, m := range []string{"Acquire", "TryAcquire", "Release", "Extend", "OpenSession", "Campaign", "Resign", "FenceCheck", "List", "Inspect"} {
		if n := fake.Calls(m); n != 0 {
			t.Errorf("bad input reached the Locker: %s called %d times", m, n)
		}
	}
}

// spy records the last acquire request the handler passed on.
type spy struct {
	api.Locker
	mu   sync.Mutex
	last api.AcquireRequest
}

func (s *spy) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	s.mu.Lock()
	s.last = req
	s.mu.Unlock()
	return s.Locker.Acquire(ctx, req)
}

func TestAcquireWithoutWaitIsBoundedByMaxWait(t *testing.T) {
	sp := &spy{Locker: httpapitest.NewFake()}
	srv := newServer(t, sp, httpapi.Config{})
	if st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000}, nil); st != 200 {
		t.Fatalf("acquire: %d %+v", st, eb)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.last.WaitMs != api.MaxWait.Milliseconds() {
		t.Fatalf("wait_ms passed on = %d, want %d", sp.last.WaitMs, api.MaxWait.Milliseconds())
	}
}

// waitFor polls cond (cheap, in-memory) until it holds or the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestLongPoll(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	if st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000}, nil); st != 200 {
		t.Fatalf("acquire a: %d %+v", st, eb)
	}

	t.Run("granted on release", func(t *testing.T) {
		done := make(chan api.Lease, 1)
		// Ends when the long poll answers.
		go func() {
			var l api.Lease
			st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 60000, WaitMs: 10000}, &l)
			if st != 200 {
				t.Errorf("waiter: %d %+v", st, eb)
			}
			done <- l
		}()
		waitFor(t, "b to queue", func() bool { return fake.Waiters() == 1 })
		if st, eb := call(t, srv, "POST", "/v1/locks/release", api.ReleaseRequest{Key: "k", Owner: "a"}, nil); st != 200 {
			t.Fatalf("release a: %d %+v", st, eb)
		}
		if l := <-done; l.Owner != "b" || l.Fence == 0 {
			t.Fatalf("b got %+v", l)
		}
	})

	t.Run("wait timeout", func(t *testing.T) {
		st, eb := call(t, srv, "POST", "/v1/locks/acquire", api.AcquireRequest{Key: "k", Owner: "c", TTLMs: 1000, WaitMs: 20}, nil)
		if st != 408 || eb.Code != api.CodeWaitTimeout {
			t.Fatalf("got %d %+v", st, eb)
		}
	})

	t.Run("client disconnect cancels the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		// Ends when the request fails after cancel.
		go func() {
			body := `{"key":"k","owner":"d","ttl_ms":1000,"wait_ms":60000}`
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/locks/acquire", strings.NewReader(body))
			req.Header.Set("Content-Type", wire.ContentTypeJSON)
			resp, err := srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		waitFor(t, "d to queue", func() bool { return fake.Waiters() == 1 })
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("the cancelled request succeeded")
		}
		waitFor(t, "the server to drop d's waiter", func() bool { return fake.Waiters() == 0 })
		if owner, _, _ := fake.Holder("k"); owner != "b" {
			t.Fatalf("holder = %q, want b", owner)
		}
	})
}

func TestObserveStreams(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	var sess api.SessionInfo
	call(t, srv, "POST", "/v1/sessions", wire.SessionRequest{TTLMs: 60000}, &sess)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/elections/e/observe", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != wire.ContentTypeNDJSON {
		t.Fatalf("observe: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() api.Leader {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		var l api.Leader
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		return l
	}
	// The first line is the election as it stands: no leader yet.
	if l := next(); l.Value != "" || l.Election != "e" {
		t.Fatalf("first line %+v", l)
	}
	// Campaign now, see it streamed.
	var ld api.Leader
	call(t, srv, "POST", "/v1/elections/e/campaign", wire.CampaignRequest{Value: "v1", Session: sess.ID}, &ld)
	if l := next(); l.Value != "v1" || l.Election != "e" || l.Token != "" {
		t.Fatalf("second line %+v", l)
	}
	call(t, srv, "POST", "/v1/elections/e/resign", wire.ResignRequest{Value: "v1", Token: ld.Token}, nil)
	if l := next(); l.Value != "" {
		t.Fatalf("after resign %+v", l)
	}
	call(t, srv, "POST", "/v1/elections/e/campaign", wire.CampaignRequest{Value: "v2", Session: sess.ID}, nil)
	if l := next(); l.Value != "v2" {
		t.Fatalf("fourth line %+v", l)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (httpapi.Config{MaxBodyBytes: -1}).Validate(); err == nil {
		t.Fatal("negative MaxBodyBytes accepted")
	}
	if err := (httpapi.Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// lockerOnly hides the fake's Membership methods.
type lockerOnly struct{ api.Locker }

func TestMembership(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	steps := []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/v1/members", wire.MemberRequest{ID: "n4", Address: "10.0.0.4:7000"}, 204, ""},
		{"POST", "/v1/members", wire.MemberRequest{ID: "n4", Address: "10.0.0.4:7000"}, 204, ""}, // idempotent
		{"POST", "/v1/members", wire.MemberRequest{ID: "n4", Address: "10.0.0.9:7000"}, 409, api.CodeConflict},
		{"POST", "/v1/members", wire.MemberRequest{ID: "n5"}, 400, api.CodeBadRequest},
		{"POST", "/v1/members", `{"id":"n5","addr":"x"}`, 400, api.CodeBadRequest},
		{"DELETE", "/v1/members/n9", nil, 404, api.CodeNotFound},
	}
	for _, st := range steps {
		got, eb := call(t, srv, st.method, st.path, st.body, nil)
		if got != st.status || eb.Code != st.code {
			t.Fatalf("%s %s %v: %d %+v, want %d %s", st.method, st.path, st.body, got, eb, st.status, st.code)
		}
	}
	var status api.Status
	call(t, srv, "GET", "/v1/status", nil, &status)
	if len(status.Members) != 2 || status.Members[1].ID != "n4" || status.Members[1].Address != "10.0.0.4:7000" {
		t.Fatalf("members %+v", status.Members)
	}
	if got, eb := call(t, srv, "DELETE", "/v1/members/n4", nil, nil); got != 204 {
		t.Fatalf("remove: %d %+v", got, eb)
	}
	call(t, srv, "GET", "/v1/status", nil, &status)
	if len(status.Members) != 1 {
		t.Fatalf("members after remove %+v", status.Members)
	}

	// A Locker without membership serves no member routes.
	plain := newServer(t, lockerOnly{fake}, httpapi.Config{})
	if got, eb := call(t, plain, "POST", "/v1/members", wire.MemberRequest{ID: "n", Address: "a:1"}, nil); got != 404 || eb.Code != api.CodeNotFound {
		t.Fatalf("members on a plain Locker: %d %+v", got, eb)
	}
}

// TestChunkedBodies: a body without a declared length (curl -T -, a
// streaming client) is read to its end like a declared one, and one over
// MaxBodyBytes is still refused with "limit".
func TestChunkedBodies(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{MaxBodyBytes: 256})
	post := func(body string) (*http.Response, []byte) {
		t.Helper()
		// Hiding the reader's type hides its length: the request is chunked.
		req, err := http.NewRequest("POST", srv.URL+wire.PathTry, struct{ io.Reader }{strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		if req.ContentLength != 0 || req.TransferEncoding != nil {
			t.Fatalf("request has a declared length %d", req.ContentLength)
		}
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	resp, raw := post(`{"key":"chunked","owner":"o",` + strings.Repeat(" ", 150) + `"ttl_ms":1000}`)
	var lease api.Lease
	if resp.StatusCode != 200 || json.Unmarshal(raw, &lease) != nil || lease.Key != "chunked" || lease.Owner != "o" {
		t.Fatalf("chunked acquire: %d %s", resp.StatusCode, raw)
	}
	resp, raw = post(`{"key":"` + strings.Repeat("x", 300) + `","owner":"o","ttl_ms":1000}`)
	var eb api.ErrorBody
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(raw, &eb) != nil || eb.Code != api.CodeLimit {
		t.Fatalf("oversized chunked body: %d %s", resp.StatusCode, raw)
	}
}

// TestHotRoutesEscapedAndOtherMethods: the lock routes answer the same
// whether the router's shortcut or the mux serves them.
func TestHotRoutesEscapedAndOtherMethods(t *testing.T) {
	srv := newServer(t, httpapitest.NewFake(), httpapi.Config{})
	var lease api.Lease
	if st, eb := call(t, srv, "POST", "/v1/locks/%74ry", `{"key":"esc","owner":"o","ttl_ms":1000}`, &lease); st != 200 || lease.Key != "esc" {
		t.Fatalf("escaped try: %d %+v", st, eb)
	}
	var res api.ReleaseResult
	if st, eb := call(t, srv, "POST", wire.PathRelease, `{"key":"esc","owner":"o"}`, &res); st != 200 || !res.Released {
		t.Fatalf("release: %d %+v %+v", st, eb, res)
	}
	st, eb := call(t, srv, "GET", wire.PathTry, nil, nil)
	if st < 400 || st >= 500 || eb.Code == "" {
		t.Fatalf("GET on a POST route: %d %+v", st, eb)
	}
}

func TestProbes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(context.Context) error
		want  int
	}{
		{"ready", func(context.Context) error { return nil }, http.StatusOK},
		{"not ready", func(context.Context) error { return errors.New("no leader known") }, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{Ready: tc.ready}))
			defer srv.Close()
			for path, want := range map[string]int{"/livez": http.StatusOK, "/readyz": tc.want} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%s: %d %q, want %d", path, resp.StatusCode, body, want)
				}
			}
		})
	}
}

// TestWritesNeedJSON: every route that changes something takes only
// Content-Type: application/json, so a web page cannot post to it (a
// cross-site form or a simple fetch cannot send that type without a CORS
// preflight, which is never answered); the refusal is a JSON 415 and
// changes nothing. No answer carries CORS headers.
func TestWritesNeedJSON(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	routes := []struct{ method, path, body string }{
		{"POST", wire.PathAcquire, `{"key":"k","owner":"o","ttl_ms":60000}`},
		{"POST", wire.PathTry, `{"key":"k","owner":"o","ttl_ms":60000}`},
		{"POST", wire.PathRelease, `{"key":"k","force":true}`},
		{"POST", wire.PathExtend, `{"key":"k","owner":"o","ttl_ms":60000}`},
		{"POST", wire.PathSessions, `{"ttl_ms":60000}`},
		{"POST", wire.PathSessions + "/s/keepalive", ``},
		{"PUT", wire.PathSessions + "/s/keepalive", ``},
		{"DELETE", wire.PathSessions + "/s", ``},
		{"POST", wire.PathElections + "e/campaign", `{"value":"v","session":"s"}`},
		{"POST", wire.PathElections + "e/resign", `{"value":"v","token":"t"}`},
		{"POST", wire.PathFenceCheck, `{"resource":"r","token":1}`},
		{"POST", "/v1/locks/%74ry", `{"key":"k","owner":"o","ttl_ms":60000}`},
		{"POST", wire.PathMembers, `{"id":"x","address":"127.0.0.1:1"}`},
		{"DELETE", wire.PathMembers + "/x", ``},
	}
	calls := func() int {
		n := 0
		for _, m := range []string{"Acquire", "TryAcquire", "Release", "Extend", "OpenSession", "KeepAlive",
			"CloseSession", "Campaign", "Resign", "Proclaim", "FenceCheck", "AddVoter", "RemoveServer"} {
			n += fake.Calls(m)
		}
		return n
	}
	types := []struct {
		contentType string
		want        int // 0: anything but 415
	}{
		{"", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"application/jsonx", http.StatusUnsupportedMediaType},
		{"application/json", 0},
		{"application/json; charset=utf-8", 0},
		{"Application/JSON", 0},
	}
	for _, rt := range routes {
		for _, ct := range types {
			t.Run(rt.method+" "+rt.path+" "+ct.contentType, func(t *testing.T) {
				before := calls()
				req, err := http.NewRequest(rt.method, srv.URL+rt.path, strings.NewReader(rt.body))
				if err != nil {
					t.Fatal(err)
				}
				if ct.contentType != "" {
					req.Header.Set("Content-Type", ct.contentType)
				}
				req.Header.Set("Origin", "https://evil.example")
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				for h := range resp.Header {
					if strings.HasPrefix(strings.ToLower(h), "access-control-") {
						t.Errorf("CORS header %s: %v", h, resp.Header[h])
					}
				}
				if ct.want == 0 {
					if resp.StatusCode == http.StatusUnsupportedMediaType || calls() != before+1 {
						t.Fatalf("refused (%d calls): %s", calls()-before, raw)
					}
					return
				}
				if calls() != before {
					t.Fatal("a refused request reached the Locker")
				}
				var eb api.ErrorBody
				if resp.StatusCode != ct.want || json.Unmarshal(raw, &eb) != nil || eb.Code != wire.CodeUnsupportedMediaType {
					t.Fatalf("got %d %s, want %d with code %q", resp.StatusCode, raw, ct.want, wire.CodeUnsupportedMediaType)
				}
			})
		}
	}
}
