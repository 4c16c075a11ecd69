package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// result is one measurement of one workload on one backend (one run).
type result struct {
	Type     string             `json:"type"` // "run"
	Backend  string             `json:"backend"`
	Workload string             `json:"workload"`
	Run      int                `json:"run"`
	Metrics  map[string]float64 `json:"metrics"`
	Errors   int64              `json:"errors"`
	FirstErr string             `json:"first_error,omitempty"`
	Note     string             `json:"note,omitempty"`
}

// phase is what runLoop measured.
type phase struct {
	acq, rel  []time.Duration // samples inside the measuring window
	perWorker []int64         // completed cycles per worker inside the window
	cycles    int64           // cycles in the window
	allCycles int64           // cycles in the whole phase (warm-up included)
	reqs      int64           // requests sent in the whole phase
	window    time.Duration
	errs      int64
	firstErr  string
}

// body runs one cycle of worker i and returns its acquire and release
// durations.
type body func(ctx context.Context, w worker, i int) (acq, rel time.Duration, err error)

// runLoop runs body in every worker until warmup+dur has passed. A worker
// checks the clock before each cycle and always finishes the cycle it
// started, so no request is in flight when it returns: requests per cycle
// are exact over the whole phase.
func runLoop(ctx context.Context, b backend, ws []worker, warmup, dur time.Duration, f body) phase {
	var (
		mu  sync.Mutex
		out = phase{perWorker: make([]int64, len(ws)), window: dur}
		wg  sync.WaitGroup
		all atomic.Int64
	)
	req0 := b.requests()
	start := time.Now()
	mstart := start.Add(warmup)
	end := mstart.Add(dur)
	opctx, cancel := context.WithDeadline(ctx, end.Add(60*time.Second))
	defer cancel()
	for i, w := range ws {
		wg.Add(1)
		// Ends when the phase's time is up (checked before every cycle)
		// or ctx ends.
		go func() {
			defer wg.Done()
			var acq, rel []time.Duration
			var n, errs int64
			var firstErr string
			for opctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				a, r, err := f(opctx, w, i)
				all.Add(1)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					time.Sleep(5 * time.Millisecond) // do not spin on a persistent failure
					continue
				}
				if !t0.Before(mstart) && time.Now().Before(end) {
					acq = append(acq, a)
					rel = append(rel, r)
					n++
				}
			}
			mu.Lock()
			out.acq = append(out.acq, acq...)
			out.rel = append(out.rel, rel...)
			out.perWorker[i] = n
			out.cycles += n
			out.errs += errs
			if out.firstErr == "" {
				out.firstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.allCycles = all.Load() - out.errs
	out.reqs = b.requests() - req0
	return out
}

func makeWorkers(ctx context.Context, b backend, n int) ([]worker, error) {
	ws := make([]worker, 0, n)
	for i := 0; i < n; i++ {
		w, err := b.newWorker(ctx, i)
		if err != nil {
			closeWorkers(ws)
			return nil, fmt.Errorf("%s: worker %d: %w", b.name(), i, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func closeWorkers(ws []worker) {
	for _, w := range ws {
		w.close()
	}
}

// uncontended: every worker its own lock, acquire → release.
func uncontended(ctx context.Context, b backend, c int, warmup, dur time.Duration) (result, error) {
	ws, err := makeWorkers(ctx, b, c)
	if err != nil {
		return result{}, err
	}
	defer closeWorkers(ws)
	gen := make([]int, c) // a lock left held by a failed release is skipped
	p := runLoop(ctx, b, ws, warmup, dur, func(ctx context.Context, w worker, i int) (time.Duration, time.Duration, error) {
		key := fmt.Sprintf("bench/u/%d/%d", i, gen[i])
		t0 := time.Now()
		if err := w.acquire(ctx, key); err != nil {
			gen[i]++
			return 0, 0, fmt.Errorf("acquire: %w", err)
		}
		t1 := time.Now()
		if err := w.release(ctx, key); err != nil {
			gen[i]++
			return 0, 0, fmt.Errorf("release: %w", err)
		}
		return t1.Sub(t0), time.Since(t1), nil
	})
	r := result{Backend: b.name(), Workload: fmt.Sprintf("uncontended-c%d", c), Metrics: map[string]float64{}, Errors: p.errs, FirstErr: p.firstErr}
	r.Metrics["cycles_per_s"] = float64(p.cycles) / dur.Seconds()
	latencyMetrics(r.Metrics, "acquire", p.acq)
	latencyMetrics(r.Metrics, "release", p.rel)
	if p.allCycles > 0 {
		r.Metrics["requests_per_cycle"] = float64(p.reqs) / float64(p.allCycles)
	}
	return r, nil
}

// contended: n workers, one lock, hold 0, blocking acquire.
func contended(ctx context.Context, b backend, n int, warmup, dur time.Duration) (result, error) {
	ws, err := makeWorkers(ctx, b, n)
	if err != nil {
		return result{}, err
	}
	defer closeWorkers(ws)
	const key = "bench/contended"
	p := runLoop(ctx, b, ws, warmup, dur, func(ctx context.Context, w worker, i int) (time.Duration, time.Duration, error) {
		t0 := time.Now()
		if err := w.acquireWait(ctx, key); err != nil {
			return 0, 0, fmt.Errorf("acquire: %w", err)
		}
		t1 := time.Now()
		if err := w.release(ctx, key); err != nil {
			return 0, 0, fmt.Errorf("release: %w", err)
		}
		return t1.Sub(t0), time.Since(t1), nil
	})
	r := result{Backend: b.name(), Workload: fmt.Sprintf("contended-c%d", n), Metrics: map[string]float64{}, Errors: p.errs, FirstErr: p.firstErr}
	r.Metrics["acquisitions_per_s"] = float64(p.cycles) / dur.Seconds()
	latencyMetrics(r.Metrics, "wait", p.acq)
	latencyMetrics(r.Metrics, "release", p.rel)
	if p.allCycles > 0 {
		r.Metrics["requests_per_acquisition"] = float64(p.reqs) / float64(p.allCycles)
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, c := range p.perWorker {
		lo, hi = min(lo, c), max(hi, c)
	}
	r.Metrics["fair_min"] = float64(lo)
	r.Metrics["fair_max"] = float64(hi)
	if lo > 0 {
		r.Metrics["fair_max_over_min"] = float64(hi) / float64(lo)
	} else {
		r.Metrics["fair_max_over_min"] = math.Inf(1)
	}
	return r, nil
}

// scripts: the Redisson-shape hash lock cycle against plain SET NX +
// compare-and-delete, back to back on the same backend.
func scripts(ctx context.Context, b backend, c int, warmup, dur time.Duration) ([]result, error) {
	ws, err := makeWorkers(ctx, b, c)
	if err != nil {
		return nil, err
	}
	defer closeWorkers(ws)
	if _, ok := ws[0].(scripter); !ok {
		return nil, errors.New("not a RESP backend")
	}
	var out []result
	for _, kind := range []string{"setnx", "hash-script"} {
		gen := make([]int, c)
		p := runLoop(ctx, b, ws, warmup, dur, func(ctx context.Context, w worker, i int) (time.Duration, time.Duration, error) {
			key := fmt.Sprintf("bench/s/%s/%d/%d", kind, i, gen[i])
			acq, rel := w.acquire, w.release
			if kind == "hash-script" {
				acq, rel = w.(scripter).hashAcquire, w.(scripter).hashRelease
			}
			t0 := time.Now()
			if err := acq(ctx, key); err != nil {
				gen[i]++
				return 0, 0, fmt.Errorf("acquire: %w", err)
			}
			t1 := time.Now()
			if err := rel(ctx, key); err != nil {
				gen[i]++
				return 0, 0, fmt.Errorf("release: %w", err)
			}
			return t1.Sub(t0), time.Since(t1), nil
		})
		r := result{Backend: b.name(), Workload: fmt.Sprintf("scripts-%s-c%d", kind, c), Metrics: map[string]float64{}, Errors: p.errs, FirstErr: p.firstErr}
		r.Metrics["cycles_per_s"] = float64(p.cycles) / dur.Seconds()
		r.Metrics["acquires_per_s"] = float64(p.cycles) / dur.Seconds()
		latencyMetrics(r.Metrics, "acquire", p.acq)
		latencyMetrics(r.Metrics, "release", p.rel)
		out = append(out, r)
	}
	return out, nil
}

// pipelineDepth is the commands per pipeline of the pipeline workload.
const pipelineDepth = 100

// pipelined: one connection to the first target sends pipelines of
// pipelineDepth SET key token NX PX ttl on fresh keys, one pipeline at a
// time, for the window; ops_per_s counts the SETs answered OK.
func pipelined(ctx context.Context, b *respBackend, warmup, dur time.Duration) (result, error) {
	rdb := b.rdbs[0]
	r := result{Backend: b.name(), Workload: fmt.Sprintf("pipeline-d%d", pipelineDepth), Metrics: map[string]float64{}}
	start := time.Now()
	mstart := start.Add(warmup)
	end := mstart.Add(dur)
	var ok int64
	var lat []time.Duration
	for seq := 0; time.Now().Before(end) && ctx.Err() == nil; seq++ {
		t0 := time.Now()
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < pipelineDepth; i++ {
				p.SetNX(ctx, fmt.Sprintf("bench/p/%d/%d", seq, i), "t", b.s.ttl)
			}
			return nil
		})
		in := !t0.Before(mstart) && time.Now().Before(end)
		if err != nil {
			r.Errors++
			if r.FirstErr == "" {
				r.FirstErr = err.Error()
			}
		}
		if !in {
			continue
		}
		lat = append(lat, time.Since(t0))
		for _, c := range cmds {
			if c.(*redis.BoolCmd).Val() {
				ok++
			}
		}
	}
	r.Metrics["ops_per_s"] = float64(ok) / dur.Seconds()
	latencyMetrics(r.Metrics, "pipeline", lat)
	return r, ctx.Err()
}
