package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locknode/locknode/api"
)

// Holding: N locks held and renewed at TTL/3, as lock clients keep
// theirs (Chubby found keep-alives the dominant load of a lock service).
// Two kinds of clients:
//
//   - redsync-style (locknode-resp, redis): each lock is a SET NX PX key;
//     its renewal is redsync v4's Extend script (compare-and-pexpire) by
//     EVALSHA, sent in pipelines of 100 renewals, the pipelines spread
//     over the backend's nodes;
//   - Go sessions (locknode-http): each lock is held under its own
//     session; its renewal is the session keep-alive (client.KeepAlive,
//     what client.Session sends every TTL/3), one request each.
//
// Every lock is renewed once per TTL/3, evenly spread over that period,
// by a fixed pool of senders; a renewal due while every sender is busy
// waits for one (counted as late). The figures: renewals per second,
// the latency of one renewal request (a 100-renewal pipeline, or one
// keep-alive) at p50/p99/p99.9, renewals that found their lock gone, and
// (withPath) the servers' CPU and the leader's log entries per second.

// holdBatch is the renewals of one redsync-style pipeline.
const holdBatch = 100

// touchScriptText is go-redsync/redsync v4 scripts.go touchScript, byte
// for byte (its SHA1 is d75bb8b5bd13532ddedd17762e772346e39b321e).
const touchScriptText = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`

var touchScript = redis.NewScript(touchScriptText)

// redissonRenewText is Redisson's watchdog renewal (RedissonBaseLock's
// renewExpirationAsync), byte for byte: the lock is a hash whose field is
// the owner, renewed if the owner still holds it. locknode runs this text
// natively and batches its renewals from cluster version 4 on (by its
// SHA1: another spelling runs as a script, one entry each).
const redissonRenewText = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
	"redis.call('pexpire', KEYS[1], ARGV[1]); " +
	"return 1; " +
	"end; " +
	"return 0;"

var redissonRenew = redis.NewScript(redissonRenewText)

type holdOpts struct {
	// script is the RESP clients' lock and renewal: "redsync" (SET NX PX,
	// the Extend script) or "redisson" (the hash lock, its watchdog's
	// renewal script).
	script  string
	locks   int
	ttl     time.Duration
	warmup  time.Duration
	window  time.Duration
	senders int
}

// renewSchedule calls renew(unit) for units 0..units-1 in turn, each once
// per period, evenly spaced, from senders goroutines, for warmup+window;
// it returns the latencies and the late count of the window only.
func renewSchedule(ctx context.Context, units int, period time.Duration, senders int, warmup, window time.Duration,
	renew func(ctx context.Context, sender, unit int) error) (lat []time.Duration, late, errs int64, firstErr error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	due := make(chan int, senders)
	var mu sync.Mutex
	var measuring atomic.Bool
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		// Ends when due is closed (the schedule's end).
		go func() {
			defer wg.Done()
			for u := range due {
				t0 := time.Now()
				err := renew(ctx, s, u)
				d := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	step := period / time.Duration(units)
	start := time.Now()
	end := start.Add(warmup + window)
	for i := 0; ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * step)
		if !at.Before(end) {
			break
		}
		if !measuring.Load() && !at.Before(start.Add(warmup)) {
			measuring.Store(true)
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w) // pacing the schedule, not synchronisation
		}
		select {
		case due <- i % units:
		default:
			if measuring.Load() {
				mu.Lock()
				late++
				mu.Unlock()
			}
			select {
			case due <- i % units:
			case <-ctx.Done():
			}
		}
	}
	close(due)
	wg.Wait()
	return lat, late, errs, firstErr
}

// holdingRESP fills opts.locks SET NX PX keys, then renews them with the
// Extend script, holdBatch to a pipeline. The fill runs before measure
// (withPath) begins.
func holdingRESP(ctx context.Context, b *respBackend, o holdOpts, measure func(func() (result, error)) (result, error)) (result, error) {
	redisson := o.script == "redisson"
	renewScript, workload := touchScript, "extend"
	if redisson {
		renewScript, workload = redissonRenew, "redisson"
	}
	var rdbs []*redis.Client
	for _, a := range b.addrs {
		rdb := b.newClient(a)
		defer rdb.Close()
		for _, sc := range []*redis.Script{renewScript, hashAcquire} {
			if err := sc.Load(ctx, rdb).Err(); err != nil {
				return result{}, fmt.Errorf("SCRIPT LOAD: %w", err)
			}
		}
		rdbs = append(rdbs, rdb)
	}
	key := func(i int) string { return fmt.Sprintf("bench/hold/%d", i) }
	tok := func(i int) string { return fmt.Sprintf("tok-%d", i) }
	ms := o.ttl.Milliseconds()
	// Fill: pipelines of 1000 SET NX PX (or Redisson's lock script, nil
	// when taken), over the nodes.
	for lo := 0; lo < o.locks; lo += 1000 {
		p := rdbs[(lo/1000)%len(rdbs)].Pipeline()
		for i := lo; i < min(lo+1000, o.locks); i++ {
			if redisson {
				hashAcquire.EvalSha(ctx, p, []string{key(i)}, ms, tok(i))
			} else {
				p.SetArgs(ctx, key(i), tok(i), redis.SetArgs{Mode: "NX", TTL: o.ttl})
			}
		}
		cmds, err := p.Exec(ctx)
		if err != nil && !(redisson && errors.Is(err, redis.Nil)) {
			return result{}, fmt.Errorf("fill: %w", err)
		}
		for _, c := range cmds {
			taken := false
			switch c := c.(type) {
			case *redis.StatusCmd:
				taken = c.Val() == "OK"
			case *redis.Cmd:
				taken = errors.Is(c.Err(), redis.Nil)
			}
			if !taken {
				return result{}, fmt.Errorf("fill: %v not taken", c.Args())
			}
		}
	}
	units := (o.locks + holdBatch - 1) / holdBatch
	var lost atomic.Int64
	return measure(func() (result, error) {
		lat, late, errs, firstErr := renewSchedule(ctx, units, o.ttl/3, o.senders, o.warmup, o.window,
			func(ctx context.Context, s, u int) error {
				p := rdbs[s%len(rdbs)].Pipeline()
				for i := u * holdBatch; i < min((u+1)*holdBatch, o.locks); i++ {
					if redisson {
						redissonRenew.EvalSha(ctx, p, []string{key(i)}, ms, tok(i))
					} else {
						touchScript.EvalSha(ctx, p, []string{key(i)}, tok(i), ms)
					}
				}
				cmds, err := p.Exec(ctx)
				if err != nil {
					return err
				}
				for _, c := range cmds {
					if v, _ := c.(*redis.Cmd).Int64(); v != 1 {
						lost.Add(1)
					}
				}
				return nil
			})
		r := result{Backend: b.name(), Workload: fmt.Sprintf("holding-%d-%s", o.locks, workload), Metrics: map[string]float64{}, Errors: errs}
		if firstErr != nil {
			r.FirstErr = firstErr.Error()
		}
		r.Metrics["renewals_per_s"] = float64(len(lat)*holdBatch) / o.window.Seconds()
		r.Metrics["renewals_per_request"] = holdBatch
		latencyMetrics(r.Metrics, "renew", lat)
		r.Metrics["late"] = float64(late)
		r.Metrics["lost"] = float64(lost.Load())
		return r, nil
	})
}

// holdingSessions opens opts.locks sessions, each holding one lock, then
// keeps every session alive at TTL/3.
func holdingSessions(ctx context.Context, b *lnHTTPBackend, o holdOpts, measure func(func() (result, error)) (result, error)) (result, error) {
	ids := make([]string, o.locks)
	// Fill: 64 at a time, spread over the targets.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fillErr error
	next := atomic.Int64{}
	for w := range 64 {
		wg.Add(1)
		// Ends when every session is open or one failed.
		go func() {
			defer wg.Done()
			cl := b.cl[w%len(b.cl)]
			for {
				i := int(next.Add(1) - 1)
				if i >= o.locks || ctx.Err() != nil {
					return
				}
				s, err := cl.OpenSession(ctx, o.ttl)
				if err == nil {
					ids[i] = s.ID
					_, err = cl.TryAcquire(ctx, api.AcquireRequest{Key: fmt.Sprintf("bench/hold/%d", i), Owner: s.ID, Session: s.ID})
				}
				if err != nil {
					mu.Lock()
					fillErr = errors.Join(fillErr, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if fillErr != nil {
		return result{}, fmt.Errorf("fill: %w", fillErr)
	}
	var lost atomic.Int64
	return measure(func() (result, error) {
		lat, late, errs, firstErr := renewSchedule(ctx, o.locks, o.ttl/3, o.senders, o.warmup, o.window,
			func(ctx context.Context, s, u int) error {
				_, err := b.cl[s%len(b.cl)].KeepAlive(ctx, ids[u])
				if errors.Is(err, api.ErrSessionExpired) || errors.Is(err, api.ErrNotFound) {
					lost.Add(1)
					return nil
				}
				return err
			})
		r := result{Backend: b.name(), Workload: fmt.Sprintf("holding-%d-session", o.locks), Metrics: map[string]float64{}, Errors: errs}
		if firstErr != nil {
			r.FirstErr = firstErr.Error()
		}
		r.Metrics["renewals_per_s"] = float64(len(lat)) / o.window.Seconds()
		r.Metrics["renewals_per_request"] = 1
		latencyMetrics(r.Metrics, "renew", lat)
		r.Metrics["late"] = float64(late)
		r.Metrics["lost"] = float64(lost.Load())
		return r, nil
	})
}

// holdingEtcd holds opts.locks keys the way an etcd user holds that many
// locks: each key on a lease of its own (Grant, then a Put if absent
// with the lease), each lease kept alive every TTL/3. clientv3's KeepAlive
// sends one LeaseKeepAliveRequest per lease on a LeaseKeepAlive stream
// and reads one answer each; the harness sends exactly those messages,
// holdBatch leases back to back on one stream per sender (the streams
// spread over the nodes by the client's balancer), so a renewal request
// is a 100-renewal pipeline as for locknode. A keep-alive is answered by
// etcd's leader from memory: no raft entry, so entries/s is not measured.
func holdingEtcd(ctx context.Context, b *etcdBackend, o holdOpts, measure func(func() (result, error)) (result, error)) (result, error) {
	ttl := int64(o.ttl / time.Second)
	if ttl < 1 {
		return result{}, fmt.Errorf("hold ttl %v: etcd leases are in whole seconds", o.ttl)
	}
	leases := make([]clientv3.LeaseID, o.locks)
	lc := pb.NewLeaseClient(b.cli.ActiveConnection())
	// The fill takes longer than a lease on a small machine (each lock is
	// two raft entries), and its holder would keep each lease alive from
	// its grant on: so does keepFilled until the fill ends.
	granted := make([]atomic.Int64, o.locks)
	fillCtx, endFill := context.WithCancel(ctx)
	// One keeper per sender, each over its share of the leases: a
	// stream's keep-alives are answered one after another, each
	// forwarded to the leader by the node the stream reached.
	keepers := max(1, o.senders)
	keeperDone := make(chan error, keepers)
	for k := range keepers {
		// Ends when the fill ends (endFill) or its stream fails.
		go func() { keeperDone <- keepFilled(fillCtx, lc, granted, k, keepers, o.ttl/3) }()
	}
	// Fill: 128 at a time.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fillErr error
	next := atomic.Int64{}
	for range 128 {
		wg.Add(1)
		// Ends when every key is held or one failed.
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= o.locks || ctx.Err() != nil {
					return
				}
				err := func() error {
					l, err := b.cli.Grant(ctx, ttl)
					if err != nil {
						return err
					}
					key := fmt.Sprintf("/lockbench/hold/%d", i)
					tr, err := b.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
						Then(clientv3.OpPut(key, fmt.Sprintf("tok-%d", i), clientv3.WithLease(l.ID))).Commit()
					if err != nil {
						return err
					}
					if !tr.Succeeded {
						return fmt.Errorf("%s not taken", key)
					}
					leases[i] = l.ID
					granted[i].Store(int64(l.ID))
					return nil
				}()
				if err != nil {
					mu.Lock()
					fillErr = errors.Join(fillErr, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	endFill()
	for range keepers {
		if err := <-keeperDone; err != nil && fillErr == nil {
			fillErr = fmt.Errorf("keeping filled leases alive: %w", err)
		}
	}
	if fillErr != nil {
		return result{}, fmt.Errorf("fill: %w", fillErr)
	}
	units := (o.locks + holdBatch - 1) / holdBatch
	// One stream per sender, opened on first use and again after an error.
	streams := make([]pb.Lease_LeaseKeepAliveClient, o.senders)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends every stream
	var lost atomic.Int64
	return measure(func() (result, error) {
		lat, late, errs, firstErr := renewSchedule(ctx, units, o.ttl/3, o.senders, o.warmup, o.window,
			func(ctx context.Context, s, u int) error {
				if streams[s] == nil {
					st, err := lc.LeaseKeepAlive(sctx)
					if err != nil {
						return err
					}
					streams[s] = st
				}
				st := streams[s]
				lo, hi := u*holdBatch, min((u+1)*holdBatch, o.locks)
				for i := lo; i < hi; i++ {
					if err := st.Send(&pb.LeaseKeepAliveRequest{ID: int64(leases[i])}); err != nil {
						streams[s] = nil
						return err
					}
				}
				for i := lo; i < hi; i++ {
					resp, err := st.Recv()
					if err != nil {
						streams[s] = nil
						return err
					}
					if resp.TTL <= 0 {
						lost.Add(1)
					}
				}
				return nil
			})
		r := result{Backend: b.name(), Workload: fmt.Sprintf("holding-%d-lease", o.locks), Metrics: map[string]float64{}, Errors: errs}
		if firstErr != nil {
			r.FirstErr = firstErr.Error()
		}
		r.Metrics["renewals_per_s"] = float64(len(lat)*holdBatch) / o.window.Seconds()
		r.Metrics["renewals_per_request"] = holdBatch
		latencyMetrics(r.Metrics, "renew", lat)
		r.Metrics["late"] = float64(late)
		r.Metrics["lost"] = float64(lost.Load())
		return r, nil
	})
}

// keepFilled keeps the leases granted so far whose index is part mod
// parts alive, each once per every (or as often as the stream allows),
// on one stream, holdBatch keep-alives at a time, until ctx ends (nil)
// or the stream fails.
func keepFilled(ctx context.Context, lc pb.LeaseClient, granted []atomic.Int64, part, parts int, every time.Duration) error {
	st, err := lc.LeaseKeepAlive(ctx)
	if err != nil {
		return nilIfDone(ctx, err)
	}
	for {
		round := time.Now()
		sent := 0
		for i := part; i < len(granted); i += parts {
			if id := granted[i].Load(); id != 0 {
				if err := st.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
					return nilIfDone(ctx, err)
				}
				sent++
			}
			if sent == holdBatch || i+parts >= len(granted) {
				for ; sent > 0; sent-- {
					if _, err := st.Recv(); err != nil {
						return nilIfDone(ctx, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(round.Add(every))):
		}
	}
}

// nilIfDone is err unless ctx has ended (then the error is its end).
func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
