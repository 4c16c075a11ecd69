package ui_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/transport"
)

// waitRange is a wait bucket's label: a range, or the open last one.
var waitRange = regexp.MustCompile(`^(< 1 ms|[0-9.]+( ms| s)?–[0-9.]+ (ms|s)|> 10 s)$`)

const testUsers = `
user admin on >adminpw ~* +@all
user viewer on >viewpw ~* +@read
`

// missing skips the test, or fails it when CI promised every program.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatalf("LOCKNODE_CI=1 but %s", why)
	}
	t.Skip(why)
}

// uiCluster is n real nodes, each serving the HTTP API (and so the
// dashboard) with users configured.
type uiCluster struct {
	nodes []*cluster.Node
	urls  []string
}

func startCluster(t *testing.T, n int) *uiCluster {
	t.Helper()
	us, err := auth.Parse(strings.NewReader(testUsers))
	if err != nil {
		t.Fatal(err)
	}
	trs := make([]*transport.Transport, n)
	peers := make([]cluster.Peer, n)
	srvs := make([]*httptest.Server, n)
	for i := range n {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: tr.Addr().String()}
		srvs[i] = httptest.NewUnstartedServer(nil)
	}
	uc := &uiCluster{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		cfg := cluster.DefaultConfig()
		cfg.ID = peers[i].ID
		cfg.DataDir = t.TempDir()
		cfg.Transport = trs[i]
		cfg.Bootstrap = true
		cfg.Peers = peers
		cfg.Advertised.HTTP = srvs[i].Listener.Addr().String()
		node, err := cluster.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		audit := auth.NewAudit(nil)
		srvs[i].Config.Handler = httpapi.New(node, httpapi.Config{Users: auth.NewStoreFrom(us, audit), Audit: audit})
		srvs[i].Start()
		t.Cleanup(srvs[i].Close)
		uc.nodes = append(uc.nodes, node)
		uc.urls = append(uc.urls, srvs[i].URL)
	}
	for _, nd := range uc.nodes {
		if err := nd.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return uc
}

// roles returns the index of the leader and of a follower.
func (uc *uiCluster) roles(t *testing.T) (leader, follower int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		leader, follower = -1, -1
		for i, nd := range uc.nodes {
			if nd.IsLeader() {
				leader = i
			} else {
				follower = i
			}
		}
		if leader >= 0 && follower >= 0 {
			return leader, follower
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader")
	return
}

// browser drives one headless Chromium; it saves a screenshot when the
// test fails.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		missing(t, fmt.Sprintf("chromium not found: %v", err))
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp reports CDP events it does not know (newer Chromium) as
	// errors; they are not the page's.
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled") {
			log.Print("chromedp: ", msg)
		}
	}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	b := &browser{t: t, ctx: ctx}
	// Cancelling the allocator ends the browser process.
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot()
		}
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Run(ctx); err != nil {
		missing(t, fmt.Sprintf("chromium does not start: %v", err))
	}
	return b
}

func (b *browser) screenshot() {
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("no screenshot: %v", err)
		return
	}
	dir := os.Getenv("LOCKNODE_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	p := filepath.Join(dir, fmt.Sprintf("locknode-ui-%s-%d.png", strings.ReplaceAll(b.t.Name(), "/", "_"), time.Now().Unix()))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the failure: %s", p)
}

func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the innerText of the first element matching sel ("" if
// none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : ""; })()`, sel)
	if err := chromedp.Run(b.ctx, chromedp.Evaluate(js, &s)); err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// eval returns a JavaScript expression's value.
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, chromedp.Evaluate(js, out)); err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
}

// waitFor polls ok (a condition on the page) until it holds or 15 s
// pass; the page updates itself once a second.
func (b *browser) waitFor(what string, ok func() bool, shows ...func() string) {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			var got string
			for _, f := range shows {
				got += "\n" + f()
			}
			b.t.Fatalf("timed out waiting for %s%s", what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("%s to show %q", sel, want), func() bool { return strings.Contains(b.text(sel), want) },
		func() string { return b.text(sel) })
}

// typeInto replaces the value of input id by typing text into it.
func (b *browser) typeInto(id, text string) {
	b.t.Helper()
	var ok bool
	b.eval(fmt.Sprintf(`(() => { const e = document.getElementById(%q); if (!e) return false; e.value = ''; return true; })()`, id), &ok)
	if !ok {
		b.t.Fatalf("no input #%s", id)
	}
	b.run("typing into #"+id, chromedp.SendKeys("#"+id, text, chromedp.ByID))
}

func (b *browser) login(user, pass string) {
	b.t.Helper()
	b.waitFor("the login form", func() bool {
		var visible bool
		b.eval(`!document.getElementById('login').hidden`, &visible)
		return visible
	})
	b.typeInto("login-user", user)
	b.typeInto("login-pass", pass)
	b.run("login as "+user,
		chromedp.Click(`#login button[type=submit]`, chromedp.ByQuery),
	)
	b.waitText("#who", "user "+user)
}

// TestDashboardInBrowser loads /ui/ from a follower of a 3-node cluster
// in headless Chromium and checks what an operator sees and may do.
func TestDashboardInBrowser(t *testing.T) {
	uc := startCluster(t, 3)
	li, fi := uc.roles(t)
	leader, follower := uc.nodes[li], uc.nodes[fi]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	req := api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 120000,
		Meta: map[string]string{"host": "build-7", "pid": "4242"}}
	lease, err := leader.TryAcquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cache/a", "cache/b"} {
		if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "cacher", TTLMs: 120000}); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan error, 1)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	// Ends when it is granted, or when wcancel stops it.
	go func() {
		_, err := follower.Acquire(wctx, api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-2", TTLMs: 120000, WaitMs: 100000})
		waited <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := follower.Inspect(ctx, "jobs/nightly", api.ReadOptions{Stale: true})
		if err == nil && len(info.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiter not queued: %+v %v", info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	b := newBrowser(t)
	b.run("open the dashboard", chromedp.Navigate(uc.urls[fi]+"/ui/"))

	// Users are configured: the page asks for credentials, not the
	// browser, and shows no error before anyone has tried.
	b.waitText("#live", "signed out")
	var alarms []string
	b.eval(`[...document.querySelectorAll('.error, .bad')].map(e => e.innerText).filter(s => s)`, &alarms)
	if len(alarms) > 0 {
		t.Errorf("login page on first load shows errors: %q", alarms)
	}
	b.typeInto("login-user", "viewer")
	b.typeInto("login-pass", "not-the-password")
	b.run("a wrong password", chromedp.Click(`#login button[type=submit]`, chromedp.ByQuery))
	b.waitText("#login-error", "Wrong user or password.")
	b.login("viewer", "viewpw")
	row := `#locks tr[data-key="jobs/nightly"]`
	b.waitText(row, "worker-1")
	rowText := b.text(row)
	wants := []string{"jobs/nightly", "exclusive", "worker-1", fmt.Sprintf("#%d", lease.Fence), "worker-2",
		"host=build-7", "pid=4242", "since "}
	for _, want := range wants {
		if !strings.Contains(rowText, want) {
			t.Errorf("lock row lacks %q: %q", want, rowText)
		}
	}
	// The TTL counts down between polls.
	ttl := row + " .ttl"
	first := b.text(ttl)
	if !strings.HasPrefix(first, "TTL ") {
		t.Fatalf("TTL shows %q", first)
	}
	b.waitFor("the TTL to count down from "+first, func() bool { s := b.text(ttl); return s != first && strings.HasPrefix(s, "TTL ") })

	// The cluster: every member, the leader marked, from the follower.
	b.waitFor("three members with their status", func() bool {
		var n int
		b.eval(`document.querySelectorAll('#cluster tbody tr').length`, &n)
		return n == 3 && strings.Count(b.text("#cluster tbody"), "follower") == 2
	}, func() string { return b.text("#cluster tbody") })
	leaderRow := b.text(fmt.Sprintf(`#cluster tr[data-node="%s"]`, leader.ID()))
	if !strings.Contains(leaderRow, "leader") {
		t.Errorf("leader row %q", leaderRow)
	}
	if hdr := b.text("#node"); !strings.Contains(hdr, "node "+follower.ID()) || !strings.Contains(hdr, "leader "+leader.ID()) {
		t.Errorf("header %q", hdr)
	}

	// Sort by age: the server orders every held lock and pages them.
	setSort := func(v string) {
		b.t.Helper()
		var ok bool
		b.eval(fmt.Sprintf(`(() => { const e = document.getElementById('sort'); e.value = %q; e.dispatchEvent(new Event('change')); return e.value === %q; })()`, v, v), &ok)
		if !ok {
			t.Fatalf("sort %q not selectable", v)
		}
	}
	// Totals of everything, not of the page shown, and the cluster's.
	b.waitText("#totals", "3 locks · 3 held · 3 holders · 1 waiter · 1 contended · 0 sessions")
	b.waitText("#cluster-totals", "whole cluster: 3 locks · 1 waiter · 0 sessions open")

	// Filters run on the server and narrow the rows and the totals.
	shown := func() string {
		var keys []string
		b.eval(`[...document.querySelectorAll('#locks tbody tr[data-key]')].map(e => e.dataset.key)`, &keys)
		return strings.Join(keys, " ")
	}
	waitRows := func(what, want string) {
		b.t.Helper()
		b.waitFor(what+": rows "+want, func() bool { return shown() == want }, shown, func() string { return b.text("#totals") })
	}
	setSelect := func(id, v string) {
		b.t.Helper()
		var ok bool
		b.eval(fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event('change')); return e.value === %q; })()`, id, v, v), &ok)
		if !ok {
			t.Fatalf("%s %q not selectable", id, v)
		}
	}
	for _, st := range []string{"waiters", "contended"} {
		setSelect("state", st)
		waitRows("state "+st, "jobs/nightly")
		b.waitText("#totals", "1 lock · 1 held · 1 holder · 1 waiter · 1 contended")
	}
	setSelect("state", "free")
	waitRows("state free", "")
	b.waitText("#locks tbody", "no locks match")
	setSelect("state", "all")
	b.typeInto("meta", "host=build-7")
	waitRows("holder metadata", "jobs/nightly")
	b.typeInto("meta", "host=elsewhere")
	waitRows("other metadata", "")
	b.typeInto("meta", " ")
	b.typeInto("owner", "cacher")
	waitRows("holder owner", "cache/a cache/b")
	b.waitText("#totals", "2 locks · 2 held · 2 holders · 0 waiters")
	b.typeInto("owner", " ")
	waitRows("no filter", "cache/a cache/b jobs/nightly")

	setSort("oldest")
	b.waitText("#pageinfo", "1–3 of 3")
	b.waitText("#locks tbody", "cache/b")
	setSort("key")
	b.waitFor("key order again", func() bool { return !strings.Contains(b.text("#pageinfo"), "of 3") })

	// Filter by prefix: the server answers only matching keys.
	b.typeInto("prefix", "cache/")
	b.waitFor("only cache/ keys", func() bool {
		var keys []string
		b.eval(`[...document.querySelectorAll('#locks tbody tr[data-key]')].map(e => e.dataset.key)`, &keys)
		return fmt.Sprint(keys) == "[cache/a cache/b]"
	})
	b.typeInto("prefix", "jobs/")
	b.waitText("#locks tbody", "jobs/nightly")

	// One lock's history on click.
	b.run("open the history", chromedp.Click(row+" td.key", chromedp.ByQuery))
	b.waitText("#history tbody", "worker-1")
	if h := b.text("#history tbody"); !strings.Contains(h, "held") || !strings.Contains(h, fmt.Sprintf("#%d", lease.Fence)) {
		t.Errorf("history %q", h)
	}

	// A reader cannot force-release.
	b.run("force as a reader",
		chromedp.Click(row+" button.force", chromedp.ByQuery),
		chromedp.SendKeys("#force-reason", "testing", chromedp.ByID),
		chromedp.Click("#force-go", chromedp.ByID))
	b.waitText("#force-error", "Refused")
	b.run("cancel", chromedp.Click(`#force-form button[value=cancel]`, chromedp.ByQuery))
	if info, _ := leader.Inspect(ctx, "jobs/nightly", api.ReadOptions{}); len(info.Holders) != 1 || info.Holders[0].Owner != "worker-1" {
		t.Fatalf("after the reader's attempt: %+v", info)
	}

	// An admin can; the waiter becomes the holder without a reload.
	b.run("log out", chromedp.Click("#logout", chromedp.ByID))
	b.login("admin", "adminpw")
	b.waitText(row, "worker-1")
	b.run("force as admin",
		chromedp.Click(row+" button.force", chromedp.ByQuery),
		chromedp.SendKeys("#force-reason", "worker-1's host is gone", chromedp.ByID),
		chromedp.Click("#force-go", chromedp.ByID))
	b.waitFor("worker-2 to hold jobs/nightly", func() bool {
		s := b.text(row + " td:nth-child(3)")
		return strings.Contains(s, "worker-2") && !strings.Contains(s, "worker-1")
	})
	if s := b.text(row + " td:nth-child(4)"); strings.Contains(s, "worker-2") {
		t.Errorf("worker-2 still shown waiting: %q", s)
	}
	b.waitText("#history tbody", "forced")

	// worker-2's wait shows on the wait chart as a range of its bucket.
	b.waitFor("a wait on the wait chart", func() bool { return !strings.HasSuffix(b.text(".wait-chart .summary"), "max none") },
		func() string { return b.text(".wait-chart") })
	summary, top := b.text(".wait-chart .summary"), b.text(".wait-chart .ytop")
	if !waitRange.MatchString(top) || !strings.HasSuffix(summary, "max "+top) {
		t.Errorf("wait chart: summary %q, axis top %q; want the range of a bucket", summary, top)
	}
	if x := b.text(".wait-chart .xaxis"); !strings.Contains(x, "now") || !strings.Contains(x, "−") {
		t.Errorf("wait chart time axis %q", x)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not granted")
	}
	var errs []string
	b.eval(`[...document.querySelectorAll('.error')].map(e => e.innerText).filter(s => s && !s.startsWith('Refused'))`, &errs)
	if len(errs) > 0 {
		t.Errorf("errors on the page: %q", errs)
	}
}
