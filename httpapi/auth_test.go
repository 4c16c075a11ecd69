package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

const testUsers = `
user r on >rp ~app:* ~election/app:* +@read
user w on >wp ~app:* ~election/app:* +@write
user a on >ap ~app:* ~election/app:* +@admin
user all on >allp ~app:* ~election/app:* +@all
`

type routeSample struct {
	method, path string
	body         any
}

// routeSamples: a request for every route, its keys in the namespace
// app:*. A route without a sample fails TestRoutePermissions.
var routeSamples = map[string]routeSample{
	"POST " + wire.PathAcquire:                       {"POST", wire.PathAcquire, api.AcquireRequest{Key: "app:k", Owner: "o", TTLMs: 1000, WaitMs: 1}},
	"POST " + wire.PathTry:                           {"POST", wire.PathTry, api.AcquireRequest{Key: "app:k", Owner: "o", TTLMs: 1000}},
	"POST " + wire.PathRelease:                       {"POST", wire.PathRelease, api.ReleaseRequest{Key: "app:k", Owner: "o"}},
	"POST " + wire.PathExtend:                        {"POST", wire.PathExtend, api.ExtendRequest{Key: "app:k", Owner: "o", TTLMs: 1000}},
	"GET " + wire.PathLocks:                          {"GET", wire.PathLocks, nil},
	"GET " + wire.PathLockPrefix + "{key...}":        {"GET", wire.PathLockPrefix + "app:k", nil},
	"POST " + wire.PathSessions:                      {"POST", wire.PathSessions, wire.SessionRequest{TTLMs: 1000}},
	"PUT " + wire.PathSessions + "/{id}/keepalive":   {"PUT", wire.PathSessions + "/s1/keepalive", nil},
	"POST " + wire.PathSessions + "/{id}/keepalive":  {"POST", wire.PathSessions + "/s1/keepalive", nil},
	"DELETE " + wire.PathSessions + "/{id}":          {"DELETE", wire.PathSessions + "/s1", nil},
	"POST " + wire.PathElections + "{name}/campaign": {"POST", wire.PathElections + "app:e/campaign", wire.CampaignRequest{Value: "v", Session: "s1"}},
	"POST " + wire.PathElections + "{name}/resign":   {"POST", wire.PathElections + "app:e/resign", wire.ResignRequest{Value: "v", Token: "t"}},
	"POST " + wire.PathElections + "{name}/proclaim": {"POST", wire.PathElections + "app:e/proclaim", wire.ProclaimRequest{Value: "v", Token: "t", NewValue: "w"}},
	"GET " + wire.PathElections + "{name}/observe":   {"GET", wire.PathElections + "app:e/observe", nil},
	"POST " + wire.PathFenceCheck:                    {"POST", wire.PathFenceCheck, wire.FenceCheckRequest{Resource: "app:k", Token: 1}},
	"GET " + wire.PathStatus:                         {"GET", wire.PathStatus, nil},
	"POST " + wire.PathMembers:                       {"POST", wire.PathMembers, wire.MemberRequest{ID: "n9", Address: "127.0.0.1:1"}},
	"DELETE " + wire.PathMembers + "/{id}":           {"DELETE", wire.PathMembers + "/n9", nil},
	"POST " + wire.PathClusterUpgrade:                {"POST", wire.PathClusterUpgrade, nil},
	"POST " + wire.PathTransferLeader:                {"POST", wire.PathTransferLeader, api.TransferRequest{ID: "n2"}},
	"GET " + wire.PathMetrics:                        {"GET", wire.PathMetrics, nil},
	"GET " + wire.PathSnapshot:                       {"GET", wire.PathSnapshot, nil},
	"/":                                              {"GET", "/nope", nil},

	"GET " + wire.PathLockPrefix + "{key}" + wire.PathHistory: {"GET", wire.PathLockPrefix + "app:k" + wire.PathHistory, nil},
	"GET " + wire.PathActivity:                                {"GET", wire.PathActivity, nil},
	"GET " + wire.PathClusterView:                             {"GET", wire.PathClusterView, nil},
	"GET " + wire.PathLocksByAge:                              {"GET", wire.PathLocksByAge, nil},
	"GET " + wire.PathUILocks:                                 {"GET", wire.PathUILocks, nil},
	"POST " + wire.PathForceRelease:                           {"POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:k", Reason: "stuck"}},
}

func usersHandler(t *testing.T) (*httptest.Server, *auth.Audit) {
	srv, audit, _ := usersHandlerFake(t)
	return srv, audit
}

func usersHandlerFake(t *testing.T) (*httptest.Server, *auth.Audit, *httpapitest.Fake) {
	t.Helper()
	us, err := auth.Parse(strings.NewReader(testUsers))
	if err != nil {
		t.Fatal(err)
	}
	audit := auth.NewAudit(nil)
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{
		Users:   auth.NewStoreFrom(us, audit),
		Audit:   audit,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x 1\n") }),
	})
	return srv, audit, fake
}

// counter reads one labelled counter of audit ("" if absent).
func counter(t *testing.T, audit *auth.Audit, name, label string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// send makes one request as user (no credentials when user is "").
func send(t *testing.T, srv *httptest.Server, user, pass string, s routeSample) (int, string) {
	t.Helper()
	var rd io.Reader
	if s.body != nil {
		b, _ := json.Marshal(s.body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(s.method, srv.URL+s.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if s.path == wire.PathElections+"app:e/observe" && resp.StatusCode == 200 {
		return 200, "" // a stream: do not wait for it to end
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRoutePermissions: every route × each category → allowed (neither
// 401 nor 403) exactly when the user has the route's category, else 403;
// every route without or with wrong credentials → 401; routes that name
// keys → 403 outside the namespace, even for a user with every category.
func TestRoutePermissions(t *testing.T) {
	srv, _ := usersHandler(t)
	for pattern := range httpapi.RouteCategories {
		if _, ok := routeSamples[pattern]; !ok {
			t.Errorf("route %q has no sample", pattern)
		}
	}
	users := []struct {
		name, pass string
		cats       auth.Category
	}{{"r", "rp", auth.Read}, {"w", "wp", auth.Write}, {"a", "ap", auth.Admin}, {"all", "allp", auth.All}}
	for pattern, s := range routeSamples {
		cat, ok := httpapi.RouteCategories[pattern]
		if !ok {
			t.Errorf("sample %q is not a route", pattern)
			continue
		}
		t.Run(pattern, func(t *testing.T) {
			if st, _ := send(t, srv, "", "", s); st != http.StatusUnauthorized {
				t.Errorf("no credentials: %d", st)
			}
			if st, _ := send(t, srv, "all", "wrong", s); st != http.StatusUnauthorized {
				t.Errorf("wrong password: %d", st)
			}
			for _, u := range users {
				st, body := send(t, srv, u.name, u.pass, s)
				want := cat != 0 && u.cats&cat == 0
				if got := st == http.StatusForbidden; got != want || st == http.StatusUnauthorized {
					t.Errorf("user %s: %d %s, want forbidden=%v", u.name, st, body, want)
				}
				if want && !strings.Contains(body, `"code":"forbidden"`) {
					t.Errorf("user %s: body %s", u.name, body)
				}
			}
			if !strings.Contains(s.path, "app:") && !strings.Contains(asJSON(s.body), "app:") {
				return
			}
			out := routeSample{s.method, strings.ReplaceAll(s.path, "app:", "other:"), nil}
			if s.body != nil {
				var m map[string]any
				json.Unmarshal([]byte(strings.ReplaceAll(asJSON(s.body), "app:", "other:")), &m)
				out.body = m
			}
			if st, body := send(t, srv, "all", "allp", out); st != http.StatusForbidden {
				t.Errorf("outside the namespace: %d %s", st, body)
			}
		})
	}
}

func asJSON(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEmptyUserIsDefault: Basic credentials with an empty user name are
// the default user's, as RESP's one-argument AUTH.
func TestEmptyUserIsDefault(t *testing.T) {
	us, err := auth.Parse(strings.NewReader("user default on >dp ~* +@read\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, httpapitest.NewFake(), httpapi.Config{Users: auth.NewStoreFrom(us, nil)})
	status := routeSample{"GET", wire.PathStatus, nil}
	if st, body := send(t, srv, "", "", status); st != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d %s", st, body)
	}
	req, _ := http.NewRequest("GET", srv.URL+wire.PathStatus, nil)
	req.SetBasicAuth("", "dp")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("empty user name with default's password: %d", resp.StatusCode)
	}
}

// TestForceReleaseNeedsAdmin: a release of one's own hold is write; with
// "force" it needs admin, and it is audited.
func TestForceReleaseNeedsAdmin(t *testing.T) {
	srv, audit := usersHandler(t)
	try := routeSample{"POST", wire.PathTry, api.AcquireRequest{Key: "app:k", Owner: "o", TTLMs: 60000}}
	if st, body := send(t, srv, "w", "wp", try); st != 200 {
		t.Fatalf("try: %d %s", st, body)
	}
	force := routeSample{"POST", wire.PathRelease, api.ReleaseRequest{Key: "app:k", Force: true}}
	if st, _ := send(t, srv, "w", "wp", force); st != http.StatusForbidden {
		t.Fatalf("forced release by a write user: %d", st)
	}
	if st, body := send(t, srv, "all", "allp", force); st != 200 || !strings.Contains(body, `"released":true`) {
		t.Fatalf("forced release by an admin: %d %s", st, body)
	}
	if n := counter(t, audit, "locknode_audit_events_total", auth.EventForceRelease); n != 1 {
		t.Fatalf("audited forced releases: %v", n)
	}
	if n := counter(t, audit, "locknode_auth_failures_total", "permission"); n != 1 {
		t.Fatalf("permission failures: %v", n)
	}
}

// TestListFiltered: a user lists only its namespace.
func TestListFiltered(t *testing.T) {
	srv, _, fake := usersHandlerFake(t)
	for _, k := range []string{"app:1", "other:1", "app:2"} {
		if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	st, body := send(t, srv, "r", "rp", routeSample{"GET", wire.PathLocks, nil})
	var res api.ListResult
	if err := json.Unmarshal([]byte(body), &res); st != 200 || err != nil || len(res.Locks) != 2 {
		t.Fatalf("list: %d %s", st, body)
	}
	for _, l := range res.Locks {
		if !strings.HasPrefix(l.Key, "app:") {
			t.Fatalf("listed %q", l.Key)
		}
	}
}

// The probes answer without credentials: load balancers and orchestrators
// ask without them, and they say only whether the node serves.
func TestProbesNeedNoCredentials(t *testing.T) {
	srv, _ := usersHandler(t)
	for _, path := range []string{wire.PathLivez, wire.PathReadyz} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			t.Fatalf("%s without credentials: %d", path, resp.StatusCode)
		}
	}
	// Anything else still needs them.
	resp, err := http.Get(srv.URL + wire.PathStatus)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%s without credentials: %d, want 401", wire.PathStatus, resp.StatusCode)
	}
}

// TestElectionKeysRefusedByLockRoutes: an election's lock is changed only
// through the election routes, whatever the user may write; an admin's
// forced release is the one exception.
func TestElectionKeysRefusedByLockRoutes(t *testing.T) {
	srv, _ := usersHandler(t)
	const key = api.ElectionPrefix + "app:e"
	for _, r := range []routeSample{
		{"POST", wire.PathTry, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60000}},
		{"POST", wire.PathAcquire, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60000, WaitMs: 1}},
		{"POST", wire.PathAcquire, api.AcquireRequest{Keys: []string{"app:k", key}, Owner: "o", TTLMs: 60000, WaitMs: 1}},
		{"POST", wire.PathRelease, api.ReleaseRequest{Key: key, Owner: "o"}},
		{"POST", wire.PathExtend, api.ExtendRequest{Key: key, Owner: "o", TTLMs: 60000}},
	} {
		for _, u := range [][2]string{{"w", "wp"}, {"all", "allp"}} {
			if st, body := send(t, srv, u[0], u[1], r); st != http.StatusForbidden || !strings.Contains(body, "election") {
				t.Errorf("%s %+v by %s: %d %s, want 403", r.path, r.body, u[0], st, body)
			}
		}
	}
	force := routeSample{"POST", wire.PathRelease, api.ReleaseRequest{Key: key, Force: true}}
	// Nothing holds it here: the fake answers not held, past the guard.
	if st, body := send(t, srv, "all", "allp", force); st != http.StatusNotFound {
		t.Fatalf("forced release of an election's lock by an admin: %d %s, want the lock's answer", st, body)
	}
}
