package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/fence"
)

// SurfaceConfig sizes the workload of Surfaces. Zero fields take the
// defaults named.
type SurfaceConfig struct {
	Seed uint64
	// Keys is how many contended lock keys Go handles and `locknode lock`
	// children share (default 2).
	Keys int
	// Handles, Campaigners and Abandoners are how many goroutines take Go
	// Lock handles, campaign in one election with sessions, and take
	// holds through the client API that they never renew or release
	// (default 3, 3, 1).
	Handles, Campaigners, Abandoners int
	// Children is how many goroutines run `locknode lock` children (each
	// a shell loop writing through the fence middleware with curl); 0
	// without Bin.
	Children int
	// Bin is the locknode binary for the children (BuildLocknode).
	Bin string
	// TTL of handles and children (default 2s); AbandonTTL of the
	// abandoned holds (default 1s); SessionTTL of the campaigners'
	// sessions (default 2s).
	TTL, AbandonTTL, SessionTTL time.Duration
}

func (cfg *SurfaceConfig) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&cfg.Keys, 2)
	def(&cfg.Handles, 3)
	def(&cfg.Campaigners, 3)
	def(&cfg.Abandoners, 1)
	if cfg.Bin == "" {
		cfg.Children = 0
	}
	dur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	dur(&cfg.TTL, 2*time.Second)
	dur(&cfg.AbandonTTL, time.Second)
	dur(&cfg.SessionTTL, 2*time.Second)
}

// election is the one election the campaigners contend for.
const election = "chaos"

// Surfaces drives what users touch — Go Lock handles with renewal,
// sessions and elections watched through Leadership.Done, `locknode lock`
// children, and a resource behind the fence middleware (with the
// cluster's fence registry) — against a Cluster, and records on the
// History's clock what each client believed, for CheckHandles,
// CheckLeaders, CheckAccepted, CheckHoldEnds, CheckLeases and
// CheckLeftovers.
type Surfaces struct {
	c   *Cluster
	h   *History
	cfg SurfaceConfig
	res *httptest.Server // on loopback TCP; resURL and resHTTP reach it
	// resURL is the fenced resource's base URL and resHTTP the client
	// that writes to it (on Options.Network when set).
	resURL  string
	resHTTP *http.Client
	reg     *client.Client // the fence registry's client; also reads

	mu sync.Mutex
	// resLocks: one check at a time per resource, so accepts are recorded
	// in order. A channel of one, not a mutex: a check waits on the
	// network, and a goroutine queued on a mutex would stop virtual time
	// in a synctest bubble (package sim) while the network waits for it.
	resLocks map[string]chan struct{}
	handles  []Belief
	leaders  []Belief
	children map[string]*Belief // by child and fence
	accepts  []FenceAccept
	ends     []HoldEnd
	leases   []LeaseEnd
	keys     map[string]bool // every key a client touched
	counts   map[string]int
}

type whoKey struct{}

// NewSurfaces starts the fenced resource (closed by t.Cleanup). Call Run,
// then Check.
func (c *Cluster) NewSurfaces(h *History, cfg SurfaceConfig) *Surfaces {
	cfg.defaults()
	s := &Surfaces{c: c, h: h, cfg: cfg, resLocks: map[string]chan struct{}{}, children: map[string]*Belief{},
		keys: map[string]bool{}, counts: map[string]int{}}
	s.reg = s.client()
	mw, err := fence.Middleware(fence.Config{Checker: recorder{s: s, inner: fence.WithRegistry(s.reg, fence.NewMemory(0))}})
	if err != nil {
		c.t.Fatalf("testcluster: fence middleware: %v", err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	inner := mw(ok)
	res := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, r.URL.Query().Get("who"))))
	})
	if s.resHTTP = c.httpClient(); s.resHTTP == nil {
		s.res = httptest.NewServer(res)
		c.t.Cleanup(s.res.Close)
		s.resURL, s.resHTTP = s.res.URL, http.DefaultClient
		return s
	}
	ln, err := c.opts.Network.Listen()
	if err != nil {
		c.t.Fatalf("testcluster: resource listener: %v", err)
	}
	srv := &http.Server{Handler: res, ReadHeaderTimeout: 10 * time.Second}
	// Ends when the cleanup closes the server.
	go func() { _ = srv.Serve(ln) }()
	c.t.Cleanup(func() {
		_ = srv.Close()
		s.resHTTP.CloseIdleConnections()
	})
	s.resURL = "http://" + ln.Addr().String()
	return s
}

// recorder records every token the resource accepts, in the order it
// accepts them (one check at a time per resource).
type recorder struct {
	s     *Surfaces
	inner fence.Checker
}

func (r recorder) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	who, _ := ctx.Value(whoKey{}).(string)
	r.s.mu.Lock()
	if key, ok := strings.CutPrefix(resource, "/c/"); ok {
		// A child believes it holds the lock at least from its first
		// write to its last that reached the resource, accepted or not:
		// a stale one refused is a belief all the same.
		at, id := r.s.h.Now(), who+"/"+strconv.FormatUint(token, 10)
		if b := r.s.children[id]; b != nil {
			b.To = at
		} else {
			r.s.children[id] = &Belief{Key: key, Holder: who, Fence: token, Limit: 1, From: at, To: at}
		}
	}
	l := r.s.resLocks[resource]
	if l == nil {
		l = make(chan struct{}, 1)
		r.s.resLocks[resource] = l
	}
	r.s.mu.Unlock()
	l <- struct{}{}
	defer func() { <-l }()
	got, err := r.inner.FenceCheck(ctx, resource, token)
	if err != nil || !got.OK {
		return got, err
	}
	at := r.s.h.Now()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.accepts = append(r.s.accepts, FenceAccept{Resource: resource, Token: token, By: who, At: at})
	return got, nil
}

func (s *Surfaces) client() *client.Client {
	cl, err := client.New(client.Config{Endpoints: s.c.Endpoints(), RequestTimeout: 2 * time.Second, HTTPClient: s.c.httpClient(),
		Retry: client.RetryPolicy{MaxAttempts: 4, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
	if err != nil {
		s.c.t.Fatalf("testcluster: client: %v", err)
	}
	return cl
}

func (s *Surfaces) count(what string) {
	s.mu.Lock()
	s.counts[what]++
	s.mu.Unlock()
}

func (s *Surfaces) touch(key string) {
	s.mu.Lock()
	s.keys[key] = true
	s.mu.Unlock()
}

// write offers one fenced write to resource path as who; true if
// accepted.
func (s *Surfaces) write(ctx context.Context, path, who string, token uint64) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.resURL+path+"?who="+who, nil)
	if err != nil {
		return false
	}
	req.Header.Set(fence.DefaultHeader, strconv.FormatUint(token, 10))
	resp, err := s.resHTTP.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusNoContent
}

// doneAt watches done and returns a function giving when it was closed,
// or cut if that is earlier (or it was not closed).
func (s *Surfaces) doneAt(done <-chan struct{}) func(cut time.Duration) time.Duration {
	at := make(chan time.Duration, 1)
	stop := make(chan struct{})
	// Ends when done is closed or the returned function is called.
	go func() {
		select {
		case <-done:
			at <- s.h.Now()
		case <-stop:
			at <- -1
		}
	}()
	return func(cut time.Duration) time.Duration {
		close(stop)
		if d := <-at; d >= 0 && d < cut {
			return d
		}
		return cut
	}
}

// Run drives every surface until ctx ends, then stops them cleanly
// (unlock, resign, close sessions).
func (s *Surfaces) Run(ctx context.Context) {
	var wg sync.WaitGroup
	spawn := func(kind uint64, n int, f func(ctx context.Context, i int, rng *rand.Rand)) {
		for i := range n {
			wg.Add(1)
			rng := rand.New(rand.NewPCG(s.cfg.Seed, kind<<32|uint64(i)))
			// Each worker ends when ctx does.
			go func() {
				defer wg.Done()
				f(ctx, i, rng)
			}()
		}
	}
	spawn(1, s.cfg.Handles, s.handleWorker)
	spawn(2, s.cfg.Campaigners, s.campaigner)
	spawn(3, s.cfg.Abandoners, s.abandoner)
	spawn(4, s.cfg.Children, s.childWorker)
	wg.Wait()
}

func (s *Surfaces) key(rng *rand.Rand) string { return fmt.Sprintf("h-%d", rng.IntN(s.cfg.Keys)) }

// LockKeys are the contended keys the handles lock (the semaphore's
// among them): the keys worth watching with RecordApplied.
func (s *Surfaces) LockKeys() []string {
	keys := []string{semKey}
	for i := range s.cfg.Keys {
		keys = append(keys, fmt.Sprintf("h-%d", i))
	}
	return keys
}

// semKey is the semaphore the handles share.
const semKey = "sem"

// handleWorker takes Go Lock handles on the contended keys and writes
// through the fence while its handle's Context lives. Some handles are
// bound to a session (worker 0's), some capped by a max hold shorter than
// their work, some hold one of the two permits of a semaphore (no fenced
// writes: its holders overlap by design).
func (s *Surfaces) handleWorker(ctx context.Context, i int, rng *rand.Rand) {
	cl := s.client()
	var sess *client.Session
	defer func() {
		if sess != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_ = sess.Close(cctx)
			cancel()
		}
	}()
	for j := 0; ctx.Err() == nil; j++ {
		key, who, limit := s.key(rng), fmt.Sprintf("handle-%d-%d", i, j), 1
		opts := []client.LockOption{client.WithTTL(s.cfg.TTL), client.WithWait(1500 * time.Millisecond)}
		switch rng.IntN(4) {
		case 0:
			key, limit = semKey, 2
			opts = append(opts, client.WithSemaphore(limit))
		case 1:
			// Shorter than some of the work: the cap must end the
			// handle's Context before anyone else is granted the key.
			opts = append(opts, client.WithMaxHold(s.cfg.TTL/2))
		}
		if i == 0 {
			if sess != nil && sess.Err() != nil {
				s.count("handle session ended")
				sess = nil
			}
			if sess == nil {
				sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				var err error
				if sess, err = cl.NewSession(sctx, s.cfg.SessionTTL); err != nil {
					sess = nil
				}
				cancel()
			}
			if sess != nil {
				opts = append(opts, client.WithSession(sess))
			}
		}
		s.touch(key)
		l, err := cl.Lock(ctx, key, opts...)
		if err != nil {
			s.count("handle refused or failed")
			pause(ctx, time.Duration(20+rng.IntN(100))*time.Millisecond)
			continue
		}
		if l.Context().Err() != nil {
			// Granted, but answered too late to use: the handle came back
			// with its Context done, so its holder never believed it held
			// the key (the client's contract; TestLockGrantedLate).
			s.count("handle granted in jeopardy")
			uctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_ = l.Unlock(uctx)
			cancel()
			continue
		}
		from := s.h.Now()
		done := s.doneAt(l.Context().Done())
		// Work for a while; some holds outlast a renewal or two.
		work := time.Duration(100+rng.IntN(int(s.cfg.TTL/time.Millisecond))) * time.Millisecond
		end := time.Now().Add(work)
		for time.Now().Before(end) && l.Context().Err() == nil && ctx.Err() == nil {
			if limit == 1 && s.write(l.Context(), "/h/"+key, who, l.Fence()) {
				s.count("handle write accepted")
			}
			pause(l.Context(), 30*time.Millisecond)
		}
		to := done(s.h.Now())
		if l.Context().Err() != nil {
			s.count("handle lost: " + context.Cause(l.Context()).Error())
		} else {
			s.count("handle held")
		}
		uctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = l.Unlock(uctx)
		cancel()
		s.mu.Lock()
		s.handles = append(s.handles, Belief{Key: key, Holder: who, Fence: l.Fence(), Limit: limit, From: from, To: to})
		s.mu.Unlock()
	}
}

// campaigner campaigns with a session, leads for a while (writing
// through the fence while Done is open) and resigns.
func (s *Surfaces) campaigner(ctx context.Context, i int, rng *rand.Rand) {
	cl := s.client()
	s.touch(api.ElectionPrefix + election)
	var sess *client.Session
	defer func() {
		if sess != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_ = sess.Close(cctx)
			cancel()
		}
	}()
	for j := 0; ctx.Err() == nil; j++ {
		if sess != nil && sess.Err() != nil {
			s.count("session ended")
			sess = nil
		}
		if sess == nil {
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			var err error
			sess, err = cl.NewSession(sctx, s.cfg.SessionTTL)
			cancel()
			if err != nil {
				sess = nil
				pause(ctx, 100*time.Millisecond)
				continue
			}
		}
		who := fmt.Sprintf("leader-%d-%d", i, j)
		ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ld, err := cl.Elect(ectx, election, who, sess)
		cancel()
		if err != nil {
			pause(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
			continue
		}
		from := s.h.Now()
		done := s.doneAt(ld.Done())
		end := time.Now().Add(time.Duration(100+rng.IntN(1500)) * time.Millisecond)
	work:
		for time.Now().Before(end) && ctx.Err() == nil {
			select {
			case <-ld.Done():
				break work
			default:
			}
			if s.write(ctx, "/e/"+election, who, ld.Fence()) {
				s.count("leader write accepted")
			}
			if rng.IntN(10) == 0 {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				_ = ld.Proclaim(pctx, who+"-p")
				cancel()
			}
			pause(ctx, 30*time.Millisecond)
		}
		to := done(s.h.Now())
		if ld.Err() != nil {
			s.count("leadership lost")
		} else {
			s.count("leadership resigned")
		}
		rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = ld.Resign(rctx)
		cancel()
		s.mu.Lock()
		s.leaders = append(s.leaders, Belief{Key: api.ElectionPrefix + election, Holder: who, Fence: ld.Fence(), Limit: 1, From: from, To: to})
		s.mu.Unlock()
	}
}

// abandoner takes holds it never renews nor releases — a client that
// died right after its grant — and watches when each ends.
func (s *Surfaces) abandoner(ctx context.Context, i int, _ *rand.Rand) {
	cl := s.client()
	read := LockerReader(cl)
	for j := 0; ctx.Err() == nil; j++ {
		key, owner := fmt.Sprintf("abandoned-%d-%d", i, j), NewOwner()
		s.touch(key)
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := cl.TryAcquire(actx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: s.cfg.AbandonTTL.Milliseconds(), RequestID: "tc-" + owner})
		cancel()
		last := s.h.Now()
		if err != nil {
			// Maybe granted: the leftover check watches it.
			pause(ctx, 100*time.Millisecond)
			continue
		}
		// Watched to its end even past ctx: the run's end must not cut a
		// hold's measurement short.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.AbandonTTL+30*time.Second)
		w, err := WatchHold(wctx, key, owner, 20*time.Millisecond, read)
		cancel()
		if err != nil {
			s.count("abandoned hold never seen ending")
			continue
		}
		s.count("abandoned hold")
		at := func(t time.Time) time.Duration {
			if t.IsZero() {
				return 0
			}
			return t.Sub(s.h.Start())
		}
		end := HoldEnd{Key: key, Owner: owner, TTL: s.cfg.AbandonTTL, Last: last,
			HeldSeen: at(w.HeldSent), GoneSent: at(w.GoneSent), EndedBy: at(w.GoneAt), Failed: w.Failed,
			Rate: slowestRate(s.c, sent, w.GoneAt)}
		s.mu.Lock()
		s.ends = append(s.ends, end)
		// The nemesis runs clocks up to 2% fast: the clients' default
		// drift margin, TTL/10, covers that.
		s.leases = append(s.leases, LeaseEnd{Owner: owner, Sent: sent, TTL: s.cfg.AbandonTTL, EndedBy: w.GoneAt, Margin: s.cfg.AbandonTTL / 10})
		s.mu.Unlock()
	}
}

// childScript writes through the fence five times, 50 ms apart, as the
// command of `locknode lock`.
const childScript = `i=0; while [ $i -lt 5 ]; do curl -s -o /dev/null -X POST -H "Locknode-Fence: $LOCKNODE_FENCE" "$TC_URL/c/$LOCKNODE_LOCK?who=$TC_WHO"; sleep 0.05; i=$((i+1)); done`

// childWorker runs `locknode lock KEY -- sh -c childScript` on the
// contended keys.
func (s *Surfaces) childWorker(ctx context.Context, i int, rng *rand.Rand) {
	for j := 0; ctx.Err() == nil; j++ {
		key, who := s.key(rng), fmt.Sprintf("child-%d-%d", i, j)
		s.touch(key)
		cmd := exec.CommandContext(ctx, s.cfg.Bin, "lock", "--endpoints", strings.Join(s.c.Endpoints(), ","),
			"--ttl", s.cfg.TTL.String(), "--wait", "1500ms", "--grace", "200ms", key, "--", "sh", "-c", childScript)
		cmd.Env = append(os.Environ(), "TC_URL="+s.resURL, "TC_WHO="+who, "LOCKNODE_LOG_LEVEL=off")
		// SIGTERM: locknode lock stops its child's process group, then
		// releases; a SIGKILL would leave the child running.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			s.count("child ran")
		case errors.As(err, &ee) && ee.ExitCode() == 75:
			s.count("child: lock busy")
		case errors.As(err, &ee) && ee.ExitCode() == 128+int(syscall.SIGTERM) && ctx.Err() == nil:
			s.count("child stopped: lock in jeopardy or lost")
		case ctx.Err() != nil:
		default:
			s.count("child failed")
			s.c.log.Debug("locknode lock", "error", err, "output", string(out))
			pause(ctx, 100*time.Millisecond)
		}
	}
}

// Summary counts what the surfaces did.
func (s *Surfaces) Summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.counts))
	for k := range s.counts {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s=%d; ", k, s.counts[k])
	}
	fmt.Fprintf(&b, "beliefs: %d handles, %d leaderships, %d children; %d accepted writes", len(s.handles), len(s.leaders), len(s.children), len(s.accepts))
	return b.String()
}

// Check runs every checker on what was recorded; call it after Run
// returned and the cluster healed. slack is how long past its TTL a hold
// may still be seen held (one tick, one election, the nemesis's longest
// outage), stretched by a slow clock (HoldEnd.Allowed).
func (s *Surfaces) Check(ctx context.Context, slack time.Duration) error {
	end := s.h.Now()
	left, err := s.leftovers(ctx, slack)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	handles := append([]Belief(nil), s.handles...)
	for _, b := range s.children {
		handles = append(handles, *b)
	}
	return errors.Join(
		CheckHandles(handles),
		CheckLeaders(s.leaders),
		CheckAccepted(s.accepts),
		CheckHoldEnds(s.ends, slack),
		CheckLeases(s.leases),
		CheckLeftovers(end, left, slack),
	)
}

// leftovers waits, for every key a client touched, until its holds have
// ended and its waiters left (or TTL + slack, and the longest wait, have
// passed), and reports what it saw.
func (s *Surfaces) leftovers(ctx context.Context, slack time.Duration) ([]Leftover, error) {
	s.mu.Lock()
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	sort.Strings(keys)
	longest := max(s.cfg.TTL, s.cfg.SessionTTL, s.cfg.AbandonTTL)
	deadline := time.Now().Add(longest + slack + 2*time.Second)
	var out []Leftover
	for _, k := range keys {
		var l Leftover
		l.Key = k
		for {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			info, err := s.reg.Inspect(rctx, k, api.ReadOptions{})
			cancel()
			now := s.h.Now()
			if errors.Is(err, api.ErrNotFound) {
				info, err = api.LockInfo{}, nil
			}
			if err == nil {
				l.Waiters = len(info.Waiters)
				if len(info.Holders) > 0 && l.Owner == "" {
					h := info.Holders[0]
					l.Owner, l.TTL = h.Owner, max(time.Duration(h.TTLMs)*time.Millisecond, longest)
				}
				if len(info.Holders) == 0 && l.Waiters == 0 {
					l.EndedBy = now
					break
				}
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				l.EndedBy = now
				break
			}
			pause(ctx, 50*time.Millisecond)
		}
		if l.Owner != "" || l.Waiters > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// latest is the most any watched hold was still seen held beyond Last +
// TTL.
func (s *Surfaces) latest() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m time.Duration
	for _, e := range s.ends {
		m = max(m, e.HeldSeen-e.Last-e.TTL)
	}
	return m
}
