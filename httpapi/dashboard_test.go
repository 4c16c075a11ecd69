package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// nodeServer is a real single-node cluster behind the HTTP API.
type nodeServer struct {
	node *cluster.Node
	srv  *httptest.Server
}

func startNodeServer(t testing.TB, cfg httpapi.Config) *nodeServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	ccfg := cluster.DefaultConfig()
	ccfg.ID = "n1"
	ccfg.DataDir = t.TempDir()
	ccfg.Bootstrap = true
	ccfg.Advertised.HTTP = srv.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cluster.Start(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = httpapi.New(node, cfg)
	srv.Start()
	t.Cleanup(srv.Close)
	return &nodeServer{node: node, srv: srv}
}

// get fetches path as user (none when ""), decoding a 200 answer into
// out; it returns the status and the raw body.
func (ns *nodeServer) get(t testing.TB, user, pass, path string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ns.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return do(t, ns.srv.Client(), req, out)
}

func (ns *nodeServer) post(t *testing.T, user, pass, path string, body, out any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, ns.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return do(t, ns.srv.Client(), req, out)
}

func do(t testing.TB, c *http.Client, req *http.Request, out any) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", req.Method, req.URL.Path, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

func historyPath(key string) string {
	return wire.PathLockPrefix + url.PathEscape(key) + wire.PathHistory
}

func TestDashboardHistoryRoute(t *testing.T) {
	ns := startNodeServer(t, httpapi.Config{})
	ctx := context.Background()
	// A key with a slash, and one whose name ends like the route.
	for _, key := range []string{"jobs/nightly", "x/history"} {
		for _, o := range []string{"a", "b"} {
			if _, err := ns.node.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: o, TTLMs: 60000}); err != nil {
				t.Fatal(err)
			}
			if o == "a" {
				if _, err := ns.node.Release(ctx, api.ReleaseRequest{Key: key, Owner: o}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var h api.History
	st, raw := ns.get(t, "", "", historyPath("jobs/nightly"), &h)
	if st != 200 {
		t.Fatalf("history: %d %s", st, raw)
	}
	if h.Key != "jobs/nightly" || len(h.Entries) != 2 || h.Entries[0].Owner != "b" || h.Entries[0].End != "held" || h.Entries[0].EndedMs != 0 ||
		h.Entries[1].Owner != "a" || h.Entries[1].End != "release" || h.Entries[1].EndedMs < h.Entries[1].GrantedMs || h.Entries[1].Mode != "exclusive" {
		t.Fatalf("history %s", raw)
	}
	// The contract's field names.
	for _, f := range []string{`"key":`, `"entries":`, `"owner":`, `"mode":`, `"fence":`, `"granted_ms":`, `"ended_ms":`, `"end":`} {
		if !strings.Contains(raw, f) {
			t.Errorf("history JSON lacks %s: %s", f, raw)
		}
	}
	// An inspect of a key ending in /history is still an inspect.
	var li api.LockInfo
	if st, raw := ns.get(t, "", "", wire.PathLockPrefix+url.PathEscape("x/history"), &li); st != 200 || li.Key != "x/history" {
		t.Fatalf("inspect x/history: %d %s", st, raw)
	}
	// A key never granted: an empty list, not null.
	if st, raw := ns.get(t, "", "", historyPath("none"), nil); st != 200 || !strings.Contains(raw, `"entries":[]`) {
		t.Fatalf("unknown key: %d %s", st, raw)
	}
	// Bad keys are refused like an inspect's.
	if st, raw := ns.get(t, "", "", historyPath(strings.Repeat("k", 600)), nil); st != http.StatusRequestEntityTooLarge && st != http.StatusBadRequest {
		t.Fatalf("long key: %d %s", st, raw)
	}
	var a api.Activity
	if st, raw := ns.get(t, "", "", wire.PathActivity, &a); st != 200 || a.Node != "n1" || len(a.Samples) != int(cluster.DefaultActivityWindow/time.Second) {
		t.Fatalf("activity: %d %.200s", st, raw)
	}
	grants := 0
	for _, s := range a.Samples {
		grants += s.Grants
	}
	if grants != 4 {
		t.Fatalf("activity counts %d grants, want 4", grants)
	}
	// The wait chart's axis: every bucket named as a range, in order.
	if got, want := strings.Join(a.WaitBuckets, ", "), strings.Join(api.WaitBucketLabels(), ", "); got != want || !strings.HasPrefix(got, "< 1 ms, 1–2 ms, 2–5 ms") || !strings.HasSuffix(got, "5–10 s, > 10 s") {
		t.Fatalf("activity wait buckets %q, want %q", got, want)
	}
	var cv api.ClusterView
	if st, raw := ns.get(t, "", "", wire.PathClusterView, &cv); st != 200 || len(cv.Nodes) != 1 || !cv.Nodes[0].Self || cv.Nodes[0].Status == nil || cv.Nodes[0].Status.Leader != "n1" {
		t.Fatalf("cluster view: %d %s", st, raw)
	}
}

// syncBuffer is a log sink tests read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDashboardPermissions(t *testing.T) {
	us, err := auth.Parse(strings.NewReader(testUsers))
	if err != nil {
		t.Fatal(err)
	}
	var auditLog syncBuffer
	audit := auth.NewAudit(hclog.New(&hclog.LoggerOptions{Output: &auditLog, Level: hclog.Info}))
	ns := startNodeServer(t, httpapi.Config{Users: auth.NewStoreFrom(us, audit), Audit: audit})
	ctx := context.Background()
	for _, k := range []string{"app:1", "app:2", "other:1"} {
		if _, err := ns.node.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}

	// The page is public; its data is not.
	if st, raw := ns.get(t, "", "", "/ui/", nil); st != 200 || !strings.Contains(raw, "<html") {
		t.Fatalf("/ui/ without credentials: %d %.100s", st, raw)
	}
	if st, _ := ns.get(t, "", "", "/ui/../v1/locks", nil); st == 200 {
		t.Fatal("a path through /ui/ reached the data without credentials")
	}
	for _, p := range []string{wire.PathLocks, wire.PathActivity, wire.PathClusterView, historyPath("app:1")} {
		if st, _ := ns.get(t, "", "", p, nil); st != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d", p, st)
		}
	}
	// The page's requests get no browser login prompt.
	req, _ := http.NewRequest(http.MethodGet, ns.srv.URL+wire.PathLocks, nil)
	req.Header.Set(wire.HeaderUI, "1")
	resp, err := ns.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("dashboard request: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// A user sees the keys its patterns allow.
	var page api.ListResult
	if st, raw := ns.get(t, "r", "rp", wire.PathLocks+"?stale=true", &page); st != 200 || len(page.Locks) != 2 || page.Locks[0].Key != "app:1" || page.Locks[1].Key != "app:2" {
		t.Fatalf("reader's list: %d %s", st, raw)
	}
	tests := []struct {
		name, user, pass, method, path string
		body                           any
		want                           int
	}{
		{"history inside the patterns", "r", "rp", "GET", historyPath("app:1"), nil, 200},
		{"history outside", "r", "rp", "GET", historyPath("other:1"), nil, 403},
		{"reader force-releases", "r", "rp", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1", Reason: "stuck"}, 403},
		{"writer force-releases", "w", "wp", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1", Reason: "stuck"}, 403},
		{"admin outside the patterns", "a", "ap", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "other:1", Reason: "stuck"}, 403},
		{"admin without a reason", "a", "ap", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1"}, 400},
		{"admin with a control character", "a", "ap", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1", Reason: "a\nb"}, 400},
		{"admin with a long reason", "a", "ap", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1", Reason: strings.Repeat("r", 300)}, 400},
		{"admin", "a", "ap", "POST", wire.PathForceRelease, api.ForceReleaseRequest{Key: "app:1", Reason: "worker host died"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st int
			var raw string
			if tt.method == "GET" {
				st, raw = ns.get(t, tt.user, tt.pass, tt.path, nil)
			} else {
				st, raw = ns.post(t, tt.user, tt.pass, tt.path, tt.body, nil)
			}
			if st != tt.want {
				t.Fatalf("%d %s, want %d", st, raw, tt.want)
			}
		})
	}
	if _, err := ns.node.Inspect(ctx, "app:1", api.ReadOptions{}); err == nil {
		li, _ := ns.node.Inspect(ctx, "app:1", api.ReadOptions{})
		if len(li.Holders) != 0 {
			t.Fatalf("app:1 still held after the forced release: %+v", li)
		}
	}
	if li, _ := ns.node.Inspect(ctx, "other:1", api.ReadOptions{}); len(li.Holders) != 1 {
		t.Fatalf("other:1 released by a refused request: %+v", li)
	}
	if log := auditLog.String(); !strings.Contains(log, "event=force_release") || !strings.Contains(log, `reason="worker host died"`) || !strings.Contains(log, "user=a") {
		t.Fatalf("audit log lacks the forced release with its reason:\n%s", log)
	}
	var h api.History
	if st, raw := ns.get(t, "r", "rp", historyPath("app:1"), &h); st != 200 || len(h.Entries) != 1 || h.Entries[0].End != "forced" {
		t.Fatalf("history after the forced release: %d %s", st, raw)
	}
}

// TestDashboardListLarge: with 100k held locks, a filtered page of the
// list route the dashboard polls carries one page of matching locks and
// a cursor, whatever the table's size.
func TestDashboardListLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("100k locks: not in -short")
	}
	ns := startNodeServer(t, httpapi.Config{})
	const total = 100_000
	fillLocks(t, ns.node, total)
	var pages, seen int
	after := ""
	start := time.Now()
	for {
		var page api.ListResult
		st, raw := ns.get(t, "", "", wire.PathLocks+"?stale=true&limit=100&prefix=hot/&after="+url.QueryEscape(after), &page)
		if st != 200 {
			t.Fatalf("page: %d %.200s", st, raw)
		}
		if len(raw) > 100*400 {
			t.Fatalf("a page of 100 locks is %d bytes", len(raw))
		}
		pages++
		for _, l := range page.Locks {
			if !strings.HasPrefix(l.Key, "hot/") || l.Key <= after || len(l.Holders) != 1 {
				t.Fatalf("page has %+v after %q", l, after)
			}
			after = l.Key
			seen++
		}
		if page.Next == "" {
			break
		}
		if len(page.Locks) != 100 {
			t.Fatalf("a page before the end has %d locks", len(page.Locks))
		}
	}
	if seen != total/100 || pages != 10 {
		t.Fatalf("%d locks in %d pages, want %d in 10", seen, pages, total/100)
	}
	t.Logf("%d filtered pages of 100 over %d locks in %v", pages, total, time.Since(start))
}

// fillLocks takes total locks, 1% of them under "hot/", the rest under
// "bulk/", in multi-key acquires of 1,000 keys.
func fillLocks(t testing.TB, node *cluster.Node, total int) {
	t.Helper()
	ctx := context.Background()
	const perCmd = 1000
	for i := 0; i < total; i += perCmd {
		keys := make([]string, perCmd)
		for j := range keys {
			pfx := "bulk"
			if (i+j)%100 == 0 {
				pfx = "hot"
			}
			keys[j] = fmt.Sprintf("%s/%06d", pfx, i+j)
		}
		if _, err := node.TryAcquire(ctx, api.AcquireRequest{Keys: keys, Owner: fmt.Sprintf("o%d", i), TTLMs: 600000}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := node.Status(ctx)
	if st.Locks != total {
		t.Fatalf("%d locks held, want %d", st.Locks, total)
	}
}

// BenchmarkDashboardListPage100k: one filtered page of 100 locks, as the
// dashboard polls it, with 100,000 locks held.
func BenchmarkDashboardListPage100k(b *testing.B) {
	ns := startNodeServer(b, httpapi.Config{})
	fillLocks(b, ns.node, 100_000)
	for _, q := range []string{"prefix=hot/&limit=100", "limit=100", "prefix=hot/000&limit=100"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				var page api.ListResult
				if st, raw := ns.get(b, "", "", wire.PathLocks+"?stale=true&"+q, &page); st != 200 || len(page.Locks) == 0 {
					b.Fatalf("%d %.200s", st, raw)
				}
			}
		})
	}
}
