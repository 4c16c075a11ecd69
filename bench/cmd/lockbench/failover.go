package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// failoverTargets are the client placements of the failover workload:
// every placement a chosen locknode backend uses (-targets for a name
// without @, else its suffix), each labelled like that backend over HTTP.
func failoverTargets(names []string, def string) (modes, labels []string) {
	for _, n := range names {
		base, targets, pinned := strings.Cut(n, "@")
		if !strings.HasPrefix(base, "locknode-") || strings.HasSuffix(n, "~base") {
			continue
		}
		label := "locknode-http"
		if !pinned {
			targets = def
		} else if targets != def {
			label += "@" + targets
		}
		if !contains(modes, targets) {
			modes, labels = append(modes, targets), append(labels, label)
		}
	}
	return modes, labels
}

// failover kills -9 the leader of a locknode cluster under load (workers
// each cycling their own lock through the Go client) and measures the
// time from the kill until the next successful grant, and until every
// worker was granted again. The killed node is restarted and caught up
// before the next run. Each run is repeated for every client placement
// in modes, alternating: "spread" (one client per node, each listing
// every node starting at its own, as a load balancer gives), "leader"
// (the client starts at the leader, the node that is killed, and fails
// over), "follower" (clients list only the followers, which stay up:
// one of them becomes the leader).
func failover(ctx context.Context, s *settings, dir string, runs, workers int, limit time.Duration, modes, labels []string) ([]result, []string, error) {
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
		for m, mode := range modes {
			cls, err := failoverClients(ctx, c, mode, workers)
			if err != nil {
				return out, cmds, fmt.Errorf("failover run %d (%s): %w", run, mode, err)
			}
			r, err := failoverRun(ctx, c, cls, s, workers, limit)
			r.Backend, r.Run = labels[m], run
			if err != nil {
				return out, cmds, fmt.Errorf("failover run %d (%s): %w", run, mode, err)
			}
			out = append(out, r)
			logf("failover run %d, clients %s: next grant %.0f ms, all %d workers granted again %.0f ms (%s)", run, mode,
				r.Metrics["next_grant_ms"], workers, r.Metrics["all_granted_ms"], r.Note)
		}
	}
	return out, cmds, nil
}

// failoverClients makes the Go clients of one failover run; worker i
// uses clients[i%len]. Made per run: the leader moves with every kill.
func failoverClients(ctx context.Context, c *lnCluster, mode string, workers int) ([]*client.Client, error) {
	targets, err := lnTargets(ctx, c, mode)
	if err != nil {
		return nil, err
	}
	var reqs atomic.Int64
	hc := httpClientFor(&reqs, workers, c.tls)
	var out []*client.Client
	for _, t := range targets {
		eps := c.httpURLs(t)
		if mode == "follower" {
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
			return nil, err
		}
		out = append(out, cl)
	}
	return out, nil
}

func failoverRun(ctx context.Context, c *lnCluster, cls []*client.Client, s *settings, workers int, limit time.Duration) (result, error) {
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
	for i := 0; i < workers; i++ {
		wg.Add(1)
		// Ends when end() is called after the measurement.
		go func() {
			defer wg.Done()
			cl := cls[i%len(cls)]
			gen := 0
			for lctx.Err() == nil {
				key := fmt.Sprintf("bench/f/%d/%d", i, gen)
				owner := newToken(i)
				sent := time.Now().UnixNano()
				_, err := cl.TryAcquire(lctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: s.ttl.Milliseconds()})
				if err != nil {
					if lctx.Err() == nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					gen++
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
				_, err = cl.Release(rctx, api.ReleaseRequest{Key: key, Owner: owner})
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
	r := result{Backend: "locknode-http", Workload: "failover", Metrics: map[string]float64{}, Errors: errs.Load()}
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
