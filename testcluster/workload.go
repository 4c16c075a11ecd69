package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Workload is a random mix of lock operations by several clients on a
// few keys, recorded for the checkers.
type Workload struct {
	Clients []*Client
	Keys    []string
	// TTL of each grant (default 400ms: short, so expiries happen) and
	// longest wait of a blocking acquire (default 300ms).
	TTL, Wait time.Duration
	// OpTimeout bounds each operation (default 3s): a client that gives up
	// records an unknown outcome.
	OpTimeout time.Duration
	// Think is the longest pause of a client between two sessions (a
	// random time up to it; default 0: none, every client hammers).
	Think time.Duration
	Seed  uint64
}

// Run runs the workload until ctx ends; every client runs in its own
// goroutine, and Run returns when they all have.
func (w *Workload) Run(ctx context.Context) {
	if w.TTL <= 0 {
		w.TTL = 400 * time.Millisecond
	}
	if w.Wait <= 0 {
		w.Wait = 300 * time.Millisecond
	}
	if w.OpTimeout <= 0 {
		w.OpTimeout = 3 * time.Second
	}
	var wg sync.WaitGroup
	for i, cl := range w.Clients {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(w.Seed, uint64(i)))
		// Ends when ctx ends (each operation is bounded by OpTimeout).
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				w.session(ctx, cl, rng)
				if w.Think > 0 {
					pause(ctx, time.Duration(rng.Int64N(int64(w.Think))))
				}
			}
		}()
	}
	wg.Wait()
}

// session is one client's acquire / use / release cycle on a random key.
func (w *Workload) session(ctx context.Context, cl *Client, rng *rand.Rand) {
	op := func() (context.Context, context.CancelFunc) {
		// Outlives ctx a little so that an operation in flight when the
		// run ends still gets its answer.
		return context.WithTimeout(context.WithoutCancel(ctx), w.OpTimeout)
	}
	key := w.Keys[rng.IntN(len(w.Keys))]
	if rng.IntN(5) == 0 {
		c, cancel := op()
		_, err := cl.Get(c, key)
		cancel()
		if unknown(err) {
			pause(ctx, time.Duration(50+rng.IntN(150))*time.Millisecond)
		}
		return
	}
	owner := NewOwner()
	c, cancel := op()
	var err error
	if rng.IntN(2) == 0 {
		_, err = cl.TryAcquire(c, key, owner, w.TTL)
	} else {
		_, err = cl.Acquire(c, key, owner, w.TTL, w.Wait)
	}
	cancel()
	if err != nil {
		switch {
		case unknown(err):
			// Like a real client, back off while the cluster is in
			// trouble rather than pile up requests of unknown outcome.
			pause(ctx, time.Duration(50+rng.IntN(150))*time.Millisecond)
		case rng.IntN(4) == 0:
			// Back off a moment so holders get to finish.
			pause(ctx, time.Duration(rng.IntN(20))*time.Millisecond)
		}
		return
	}
	switch rng.IntN(6) {
	case 0:
		c, cancel := op()
		_, _ = cl.Get(c, key)
		cancel()
	case 1:
		c, cancel := op()
		_, _ = cl.Extend(c, key, owner, w.TTL)
		cancel()
	case 2:
		return // let it expire
	}
	c, cancel = op()
	_, _ = cl.Release(c, key, owner)
	cancel()
}

// Keys returns n key names with a prefix.
func Keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func unknown(err error) bool {
	o, _ := classify(err)
	return err != nil && o == Unknown
}

// pause waits d or until ctx ends (a client's back-off).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
