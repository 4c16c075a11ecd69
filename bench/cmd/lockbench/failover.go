package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/client"
)

// failoverRetry is how long a failover worker waits after an error
// before its next acquire.
const failoverRetry = 5 * time.Millisecond

// foCase is one client placement and protocol of the failover workload.
type foCase struct {
	mode  string // lnTargets placement
	resp  bool   // go-redis clients instead of the Go client
	label string // backend name in the results
}

// failoverCases are the failover workload's cases: over HTTP, every
// placement a chosen locknode backend uses (-targets for a name without
// @, else its suffix), labelled like that HTTP backend; over RESP, only
// clients on the followers (a go-redis client has one address: on the
// killed node it would wait for the restart), when a chosen RESP backend
// uses the followers.
func failoverCases(names []string, def string) []foCase {
	var out []foCase
	has := func(label string) bool {
		return slices.ContainsFunc(out, func(c foCase) bool { return c.label == label })
	}
	for _, n := range names {
		base, targets, pinned := strings.Cut(n, "@")
		if !strings.HasPrefix(base, "locknode-") || strings.Contains(n, "~") {
			continue
		}
		if !pinned {
			targets = def
		}
		suffix := ""
		if targets != def {
			suffix = "@" + targets
		}
		if !has("locknode-http" + suffix) {
			out = append(out, foCase{mode: targets, label: "locknode-http" + suffix})
		}
		if base == "locknode-resp" && targets == "follower" && !has("locknode-resp"+suffix) {
			out = append(out, foCase{mode: targets, resp: true, label: "locknode-resp" + suffix})
		}
	}
	return out
}

// failover kills -9 the leader of a locknode cluster under load (workers
// each cycling their own lock) and measures the time from the kill until
// the next successful grant, and until every worker was granted again.
// The killed node is restarted and caught up before the next run. Each
// run is repeated for every case, alternating. Placements: "spread" (one
// client per node, each listing every node starting at its own, as a
// load balancer gives), "leader" (the client starts at the leader, the
// node that is killed, and fails over), "follower" (clients of only the
// followers, which stay up: one of them becomes the leader).
func failover(ctx context.Context, s *settings, dir string, runs, workers int, limit time.Duration, cases []foCase) ([]result, []string, error) {
	c, err := newLNCluster(s.locknode, dir, 3)
	if err != nil {
		return nil, nil, err
	}
	defer c.stop()
	if err := c.start(ctx); err != nil {
		return nil, nil, err
	}
	var cmds []string
	for i := range c.nodes {
		cmds = append(cmds, shellJoin(c.argv(i)))
	}
	var out []result
	for run := 1; run <= runs; run++ {
		for _, fc := range cases {
			ws, closeWs, err := failoverWorkers(ctx, c, s, fc, workers)
			if err != nil {
				return out, cmds, fmt.Errorf("failover run %d (%s): %w", run, fc.label, err)
			}
			r, err := failoverRun(ctx, c, ws, workers, limit)
			closeWs()
			r.Backend, r.Run = fc.label, run
			if err != nil {
				return out, cmds, fmt.Errorf("failover run %d (%s): %w", run, fc.label, err)
			}
			out = append(out, r)
			logf("failover run %d, %s: next grant %.0f ms, all %d workers granted again %.0f ms (%s)", run, fc.label,
				r.Metrics["next_grant_ms"], workers, r.Metrics["all_granted_ms"], r.Note)
		}
	}
	return out, cmds, nil
}

// failoverWorkers makes the workers of one failover run (worker i on
// target i%len). Made per run: the leader moves with every kill.
func failoverWorkers(ctx context.Context, c *lnCluster, s *settings, fc foCase, workers int) ([]worker, func(), error) {
	targets, err := lnTargets(ctx, c, fc.mode)
	if err != nil {
		return nil, nil, err
	}
	ws := make([]worker, workers)
	if fc.resp {
		rb := &respBackend{label: fc.label, s: s, ln: true, lnc: c}
		for _, t := range targets {
			rb.rdbs = append(rb.rdbs, rb.newClient(c.nodes[t].resp))
		}
		for _, rdb := range rb.rdbs {
			if err := cad.Load(ctx, rdb).Err(); err != nil {
				return nil, nil, fmt.Errorf("SCRIPT LOAD: %w", err)
			}
		}
		for i := range ws {
			ws[i], _ = rb.newWorker(ctx, i)
		}
		return ws, func() {
			for _, rdb := range rb.rdbs {
				rdb.Close()
			}
		}, nil
	}
	var reqs atomic.Int64
	hc := httpClientFor(&reqs, workers, c.tls)
	var cls []*client.Client
	for _, t := range targets {
		eps := c.httpURLs(t)
		if fc.mode == "follower" {
			// Only the followers: no client moves to the old leader
			// when it comes back.
			eps = nil
			for _, u := range targets {
				eps = append(eps, c.scheme()+c.nodes[u].http)
			}
			for len(eps) > 0 && eps[0] != c.scheme()+c.nodes[t].http {
				eps = append(eps[1:], eps[0])
			}
		}
		cl, err := client.New(client.Config{Endpoints: eps, HTTPClient: hc})
		if err != nil {
			return nil, nil, err
		}
		cls = append(cls, cl)
	}
	for i := range ws {
		ws[i] = &httpWorker{c: cls[i%len(cls)], id: i, ttl: s.ttl, tokens: map[string]string{}}
	}
	return ws, func() { hc.CloseIdleConnections() }, nil
}

func failoverRun(ctx context.Context, c *lnCluster, ws []worker, workers int, limit time.Duration) (result, error) {
	var (
		killAt    atomic.Int64 // unix ns of the kill; 0 before
		firstAft  = make([]atomic.Int64, workers)
		granted   atomic.Int64
		errs      atomic.Int64
		firstErr  atomic.Value
		wg        sync.WaitGroup
		lctx, end = context.WithCancel(ctx)
	)
	defer end()
	// Keys of this run only: an acquire cut short when an earlier run
	// ended may have been granted, and its lock is held for the lease.
	nonce := time.Now().UnixNano()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		// Ends when end() is called after the measurement.
		go func() {
			defer wg.Done()
			w := ws[i]
			gen := 0
			for lctx.Err() == nil {
				key := fmt.Sprintf("bench/f/%x/%d/%d", nonce, i, gen)
				sent := time.Now().UnixNano()
				if err := w.acquire(lctx, key); err != nil {
					if lctx.Err() == nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					gen++
					// A client's retry delay: a node without a leader
					// answers at once, and a loop without one would
					// only burn the cores the election needs.
					select {
					case <-lctx.Done():
					case <-time.After(failoverRetry):
					}
					continue
				}
				now := time.Now().UnixNano()
				granted.Add(1)
				// Only a request sent after the kill counts: one the old
				// leader committed just before dying proves nothing.
				if k := killAt.Load(); k != 0 && sent > k {
					firstAft[i].CompareAndSwap(0, now)
				}
				rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := w.release(rctx, key)
				cancel()
				if err != nil {
					gen++ // that lock stays held until its lease ends; use another
				}
			}
		}()
	}
	// Let the load run before the kill.
	if err := waitFor(ctx, 10*time.Second, "load", func(context.Context) error {
		if granted.Load() < int64(workers*20) {
			return errors.New("warming up")
		}
		return nil
	}); err != nil {
		end()
		wg.Wait()
		return result{}, err
	}
	leader, err := c.leader(ctx)
	if err != nil {
		end()
		wg.Wait()
		return result{}, err
	}
	errs.Store(0)
	t0 := time.Now()
	killAt.Store(t0.UnixNano())
	c.kill9(leader)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		all := true
		for i := range firstAft {
			if firstAft[i].Load() == 0 {
				all = false
				break
			}
		}
		if all {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	end()
	wg.Wait()
	r := result{Workload: "failover", Metrics: map[string]float64{}, Errors: errs.Load()}
	r.Note = "killed leader " + c.nodes[leader].id
	if e, ok := firstErr.Load().(string); ok {
		r.FirstErr = e
	}
	next, last := int64(0), int64(0)
	missing := 0
	for i := range firstAft {
		v := firstAft[i].Load()
		if v == 0 {
			missing++
			continue
		}
		if next == 0 || v < next {
			next = v
		}
		last = max(last, v)
	}
	if next == 0 {
		r.Metrics["next_grant_ms"] = ms(limit)
	} else {
		r.Metrics["next_grant_ms"] = ms(time.Duration(next - t0.UnixNano()))
	}
	if missing > 0 {
		r.Metrics["all_granted_ms"] = ms(limit)
	} else {
		r.Metrics["all_granted_ms"] = ms(time.Duration(last - t0.UnixNano()))
	}
	r.Metrics["workers_not_granted"] = float64(missing)
	// Bring the killed node back for the next run.
	if err := c.startNode(ctx, leader); err != nil {
		return r, err
	}
	if err := c.waitCaughtUp(ctx, leader, 60*time.Second); err != nil {
		return r, err
	}
	return r, nil
}
