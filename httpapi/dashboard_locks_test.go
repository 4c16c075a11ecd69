package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// queueWaiter queues owner on key behind its holder and waits until the
// node shows it; the waiter leaves at the test's end.
func queueWaiter(t *testing.T, node *cluster.Node, key, owner string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Ends when cancel (at cleanup) abandons the wait.
	go func() {
		defer close(done)
		_, _ = node.Acquire(ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: 60000, WaitMs: 600000})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		li, err := node.Inspect(context.Background(), key, api.ReadOptions{Stale: true})
		if err == nil && len(li.Waiters) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not queued on %s: %+v %v", owner, key, li, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUILocks: the dashboard's listing narrows by state, owner and
// holder metadata, totals every match (not only the page), pages in key
// and age order, keeps to the caller's key patterns, and refuses bad
// parameters naming what it accepts.
func TestUILocks(t *testing.T) {
	us, err := auth.Parse(strings.NewReader(testUsers + "user wide on >widep ~* +@read\n"))
	if err != nil {
		t.Fatal(err)
	}
	audit := auth.NewAudit(nil)
	ns := startNodeServer(t, httpapi.Config{Users: auth.NewStoreFrom(us, audit), Audit: audit})
	// Only the metadata given, not the process's host and pid.
	ctx := api.WithoutDefaultMeta(context.Background())
	sess, err := ns.node.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []api.AcquireRequest{
		{Key: "app:build", Owner: "worker-1", Meta: map[string]string{"host": "h1", "pid": "7"}, Session: sess.ID},
		{Key: "app:deploy", Owner: "worker-2", Meta: map[string]string{"host": "h2"}, Session: sess.ID},
		{Key: "app:read", Owner: "r1", Mode: "shared", Meta: map[string]string{"host": "h1"}},
		{Key: "app:read", Owner: "r2", Mode: "shared"},
		{Key: "app:free", Owner: "gone", TTLMs: 300, LockDelay: 600000}, // free, in lock-delay, once expired
		{Key: "other:1", Owner: "worker-1", Meta: map[string]string{"host": "h1"}},
	} {
		if a.Session == "" && a.TTLMs == 0 {
			a.TTLMs = 600000
		}
		if _, err := ns.node.TryAcquire(ctx, a); err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		li, err := ns.node.Inspect(ctx, "app:free", api.ReadOptions{})
		if err == nil && len(li.Holders) == 0 && li.LockDelayMs > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("app:free not free in lock-delay: %+v %v", li, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	queueWaiter(t, ns.node, "app:deploy", "worker-3")
	queueWaiter(t, ns.node, "app:read", "writer")

	list := func(t *testing.T, user, query string) api.LockPage {
		t.Helper()
		var p api.LockPage
		if st, raw := ns.get(t, user, user+"p", wire.PathUILocks+"?stale=true&"+query, &p); st != 200 {
			t.Fatalf("%s as %s: %d %s", query, user, st, raw)
		}
		return p
	}
	keys := func(p api.LockPage) string {
		var ks []string
		for _, l := range p.Locks {
			ks = append(ks, l.Key)
		}
		return strings.Join(ks, " ")
	}
	tests := []struct {
		name, user, query string
		keys              string
		totals            api.LockTotals
	}{
		{"everything", "wide", "", "app:build app:deploy app:free app:read other:1",
			api.LockTotals{Locks: 5, Held: 4, Holders: 5, Waiters: 2, Contended: 2, Sessions: 1}},
		{"a user sees its patterns only", "r", "", "app:build app:deploy app:free app:read",
			api.LockTotals{Locks: 4, Held: 3, Holders: 4, Waiters: 2, Contended: 2, Sessions: 1}},
		{"prefix", "wide", "prefix=other:", "other:1", api.LockTotals{Locks: 1, Held: 1, Holders: 1}},
		{"held", "r", "state=held", "app:build app:deploy app:read",
			api.LockTotals{Locks: 3, Held: 3, Holders: 4, Waiters: 2, Contended: 2, Sessions: 1}},
		{"free", "r", "state=free", "app:free", api.LockTotals{Locks: 1}},
		{"with waiters", "r", "state=waiters", "app:deploy app:read",
			api.LockTotals{Locks: 2, Held: 2, Holders: 3, Waiters: 2, Contended: 2, Sessions: 1}},
		{"contended", "r", "state=contended", "app:deploy app:read",
			api.LockTotals{Locks: 2, Held: 2, Holders: 3, Waiters: 2, Contended: 2, Sessions: 1}},
		{"holder metadata", "wide", "meta=" + url.QueryEscape("host=h1"), "app:build app:read other:1",
			api.LockTotals{Locks: 3, Held: 3, Holders: 4, Waiters: 1, Contended: 1, Sessions: 1}},
		{"metadata terms on one holder", "wide", "meta=host%3Dh1&meta=pid", "app:build",
			api.LockTotals{Locks: 1, Held: 1, Holders: 1, Sessions: 1}},
		{"a waiter's owner is no holder", "wide", "owner=worker-3", "", api.LockTotals{}},
		{"owner and state", "wide", "owner=worker-2&state=contended", "app:deploy",
			api.LockTotals{Locks: 1, Held: 1, Holders: 1, Waiters: 1, Contended: 1, Sessions: 1}},
		{"an empty metadata box is no filter", "r", "meta=&state=free", "app:free", api.LockTotals{Locks: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := list(t, tc.user, tc.query)
			if got := keys(p); got != tc.keys {
				t.Errorf("keys %q, want %q", got, tc.keys)
			}
			if p.Totals != tc.totals || p.Total != tc.totals.Locks || p.Partial {
				t.Errorf("totals %+v total %d partial %v, want %+v", p.Totals, p.Total, p.Partial, tc.totals)
			}
		})
	}

	// The totals are of every match, whichever page is shown.
	var seen []string
	for off := 0; off < 10; off += 2 {
		p := list(t, "wide", fmt.Sprintf("limit=2&offset=%d", off))
		if p.Total != 5 || p.Totals.Holders != 5 || p.Offset != off {
			t.Fatalf("offset %d: total %d totals %+v offset %d", off, p.Total, p.Totals, p.Offset)
		}
		if len(p.Locks) == 0 {
			break
		}
		seen = append(seen, keys(p))
	}
	if got := strings.Join(seen, " "); got != "app:build app:deploy app:free app:read other:1" {
		t.Fatalf("key order over the pages: %q", got)
	}
	// Age order: held locks by their oldest grant (grants in the same
	// millisecond tie), free ones last.
	oldestGrant := func(li api.LockInfo) int64 {
		g := li.Holders[0].GrantedMs
		for _, h := range li.Holders {
			g = min(g, h.GrantedMs)
		}
		return g
	}
	for _, order := range []string{"oldest", "newest"} {
		p := list(t, "wide", "order="+order)
		if len(p.Locks) != 5 || p.Locks[4].Key != "app:free" {
			t.Fatalf("%s first: %q, want 5 locks, app:free last", order, keys(p))
		}
		for i := 1; i < 4; i++ {
			prev, cur := oldestGrant(p.Locks[i-1]), oldestGrant(p.Locks[i])
			if (order == "oldest" && cur < prev) || (order == "newest" && cur > prev) {
				t.Errorf("%s first: %s (granted %d) after %s (granted %d)", order, p.Locks[i].Key, cur, p.Locks[i-1].Key, prev)
			}
		}
	}

	for _, bad := range []struct{ query, says string }{
		{"state=busy", "want one of all, held, free, waiters, contended"},
		{"meta=%3Dx", "want name=value or name"},
		{"order=age", "want key or oldest or newest"},
		{"limit=5000", "want 0 to 1000"},
		{"offset=-1", "want 0 to"},
		{"stale=maybe", "not a boolean"},
		{"owner=" + strings.Repeat("o", 1000), "over the limit"},
	} {
		st, raw := ns.get(t, "wide", "widep", wire.PathUILocks+"?"+bad.query, nil)
		if st != 400 || !strings.Contains(raw, bad.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", bad.query, st, raw, bad.says)
		}
	}
	if st, _ := ns.get(t, "", "", wire.PathUILocks, nil); st != 401 {
		t.Errorf("without credentials: %d, want 401", st)
	}
}

// TestUILocksPartial: past the scan bound a key-ordered listing answers
// what it read, marked partial, instead of reading the whole table.
func TestUILocksPartial(t *testing.T) {
	httpapi.SetUIScanBound(t, 2000)
	ns := startNodeServer(t, httpapi.Config{})
	fillLocks(t, ns.node, 5000)
	var p, hot api.LockPage
	if st, raw := ns.get(t, "", "", wire.PathUILocks+"?stale=true&limit=10", &p); st != 200 {
		t.Fatalf("%d %.300s", st, raw)
	}
	if !p.Partial || p.Total != 2000 || p.Totals.Held != 2000 || len(p.Locks) != 10 {
		t.Fatalf("partial %v total %d totals %+v, %d locks; want partial, 2000 read", p.Partial, p.Total, p.Totals, len(p.Locks))
	}
	// A narrower prefix is read whole: exact totals.
	if st, raw := ns.get(t, "", "", wire.PathUILocks+"?stale=true&prefix=hot/", &hot); st != 200 || hot.Partial || hot.Total != 50 {
		t.Fatalf("hot/: %d partial %v total %d %.200s", st, hot.Partial, hot.Total, raw)
	}
}

// BenchmarkUILocks100k: one poll of the dashboard's listing, which reads
// every matching lock for its totals, with 100,000 locks held.
func BenchmarkUILocks100k(b *testing.B) {
	ns := startNodeServer(b, httpapi.Config{})
	fillLocks(b, ns.node, 100_000)
	for _, q := range []string{"limit=50", "prefix=hot/&limit=50", "state=contended&limit=50"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				var page api.LockPage
				if st, raw := ns.get(b, "", "", wire.PathUILocks+"?stale=true&"+q, &page); st != 200 || page.Total == 0 && q != "state=contended&limit=50" {
					b.Fatalf("%d %.200s", st, raw)
				}
			}
		})
	}
}
