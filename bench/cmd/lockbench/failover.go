package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// failover kills -9 the leader of a locknode cluster under load (workers
// each cycling their own lock through the Go client, which lists every
// node) and measures the time from the kill until the next successful
// grant, and until every worker was granted again. The killed node is
// restarted and caught up before the next run.
func failover(ctx context.Context, s *settings, dir string, runs, workers int, limit time.Duration) ([]result, []string, error) {
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
	var reqs atomic.Int64
	cl, err := client.New(client.Config{Endpoints: c.httpURLs(0), HTTPClient: httpClientFor(&reqs, workers, c.tls)})
	if err != nil {
		return nil, cmds, err
	}
	var out []result
	for run := 1; run <= runs; run++ {
		r, err := failoverRun(ctx, c, cl, s, workers, limit)
		if err != nil {
			return out, cmds, fmt.Errorf("failover run %d: %w", run, err)
		}
		r.Run = run
		out = append(out, r)
		logf("failover run %d: next grant %.0f ms, all %d workers granted again %.0f ms (%s)", run,
			r.Metrics["next_grant_ms"], workers, r.Metrics["all_granted_ms"], r.Note)
	}
	return out, cmds, nil
}

func failoverRun(ctx context.Context, c *lnCluster, cl *client.Client, s *settings, workers int, limit time.Duration) (result, error) {
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
