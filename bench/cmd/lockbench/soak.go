package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// The soak workload (-soak DURATION, make soak): mixed load against 3
// `locknode serve` processes, every client kind spread over all nodes,
// sampling each node's resident set and its longest apply pause. What it
// answers: does memory stay flat under churn (RSS of the first part of
// the run against the last), and does any request stall the apply path.

// soakSample is one sampling of every node.
type soakSample struct {
	Type     string    `json:"type"` // "soak-sample"
	At       float64   `json:"at_s"` // seconds since the load started
	RSS      []int64   `json:"rss_bytes"`
	MaxPause []float64 `json:"max_apply_pause_s"`
	Ops      int64     `json:"ops"`
	Errors   int64     `json:"errors"`
}

// soakCounters are what the load generators did.
type soakCounters struct {
	ops, errs                     atomic.Int64
	locks, httpLocks, scripts     atomic.Int64
	bombsRefused, bigValues, dial atomic.Int64
	published, received, slowDrop atomic.Int64
	lastErr                       atomic.Value // string
}

func (c *soakCounters) fail(what string, err error) {
	c.errs.Add(1)
	c.lastErr.Store(what + ": " + err.Error())
}

// soakBomb allocates far past any sane script memory limit; a bounded node
// refuses it with an error and keeps serving.
const soakBomb = `local s = string.rep('x', 1000000) local t = {} for i = 1, 2000 do t[i] = s .. i end return #t`

func soak(ctx context.Context, s *settings, dir string, d, every time.Duration, out, name string) error {
	c, err := newLNCluster(s.locknode, dir, 3)
	if err != nil {
		return err
	}
	defer c.stop()
	if err := c.start(ctx); err != nil {
		return err
	}
	logf("soak: cluster up; %v of mixed load, sampling every %v", d, every)
	// Dial failures are counted as errors; go-redis' own log of each one
	// would drown the samples.
	redis.SetLogger(quietRedis{})

	var cnt soakCounters
	lctx, stop := context.WithTimeout(ctx, d)
	defer stop()
	var wg sync.WaitGroup
	spawn := func(n int, f func(ctx context.Context, i int)) {
		for i := 0; i < n; i++ {
			wg.Add(1)
			// Ends when the soak's duration is over (lctx).
			go func() { defer wg.Done(); f(lctx, i) }()
		}
	}
	rdbs := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: n.resp, PoolSize: 32, MaxRetries: -1})
		defer rdbs[i].Close()
	}
	spawn(12, func(ctx context.Context, i int) { soakLocks(ctx, rdbs[i%3], i, &cnt) })
	spawn(3, func(ctx context.Context, i int) { soakHTTPLocks(ctx, c.httpURLs(i), i, &cnt) })
	spawn(2, func(ctx context.Context, i int) { soakScripts(ctx, rdbs[(i+1)%3], i, &cnt) })
	spawn(2, func(ctx context.Context, i int) { soakBigValues(ctx, rdbs[(i+2)%3], i, &cnt) })
	spawn(1, func(ctx context.Context, i int) { soakChurn(ctx, c, &cnt) })
	spawn(3, func(ctx context.Context, i int) { soakSubscriber(ctx, c.nodes[i].resp, &cnt) })
	spawn(1, func(ctx context.Context, i int) { soakSlowSubscriber(ctx, c.nodes[1].resp, &cnt) })
	spawn(1, func(ctx context.Context, i int) { soakPublisher(ctx, rdbs, &cnt) })

	start := time.Now()
	var samples []soakSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for sampling := true; sampling; {
		select {
		case <-lctx.Done():
			sampling = false
		case <-tick.C:
		}
		smp := soakSample{Type: "soak-sample", At: time.Since(start).Seconds(), Ops: cnt.ops.Load(), Errors: cnt.errs.Load()}
		for i, n := range c.nodes {
			var rss int64
			if n.proc != nil && !n.proc.exited() {
				rss, _ = rssBytes(n.proc.pid())
			}
			smp.RSS = append(smp.RSS, rss)
			smp.MaxPause = append(smp.MaxPause, scrapeGauge(ctx, c.hc, "http://"+c.nodes[i].http+"/metrics", "locknode_apply_batch_max_seconds"))
		}
		samples = append(samples, smp)
		logf("soak: %4.0fs rss %s max pause %v ops %d errors %d", smp.At, fmtMB(smp.RSS), smp.MaxPause, smp.Ops, smp.Errors)
		for i, n := range c.nodes {
			if n.proc == nil || n.proc.exited() {
				stop()
				wg.Wait()
				return fmt.Errorf("soak: node %s exited during the run (log in %s)", n.id, dir)
			}
			_ = i
		}
	}
	wg.Wait()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("soak: cluster not healthy after the load: %w", err)
	}
	return writeSoak(out, name, d, samples, &cnt)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...interface{}) {}

func fmtMB(b []int64) string {
	var parts []string
	for _, x := range b {
		parts = append(parts, fmt.Sprintf("%.0f", float64(x)/1e6))
	}
	return strings.Join(parts, "/") + " MB"
}

// soakLocks: SET NX PX and compare-and-delete on a small key range, so
// some attempts collide.
func soakLocks(ctx context.Context, rdb *redis.Client, w int, cnt *soakCounters) {
	tok := newToken(w)
	for ctx.Err() == nil {
		key := fmt.Sprintf("soak:lock:%d", rand.IntN(500))
		ok, err := rdb.SetNX(ctx, key, tok, 10*time.Second).Result()
		if err != nil {
			if ctx.Err() == nil {
				cnt.fail("set nx", err)
			}
			continue
		}
		cnt.ops.Add(1)
		if !ok {
			continue
		}
		if err := cad.Run(ctx, rdb, []string{key}, tok).Err(); err != nil && ctx.Err() == nil {
			cnt.fail("cad", err)
			continue
		}
		cnt.locks.Add(1)
	}
}

// soakHTTPLocks: the Go client's blocking Lock on a few contended keys.
func soakHTTPLocks(ctx context.Context, urls []string, w int, cnt *soakCounters) {
	cl, err := client.New(client.Config{Endpoints: urls})
	if err != nil {
		cnt.fail("client", err)
		return
	}
	for ctx.Err() == nil {
		key := fmt.Sprintf("soak:http:%d", rand.IntN(4))
		l, err := cl.Lock(ctx, key, client.WithTTL(5*time.Second), client.WithWait(2*time.Second))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, api.ErrWaitTimeout) {
				cnt.fail("http lock", err)
			}
			continue
		}
		cnt.ops.Add(1)
		if err := l.Unlock(context.Background()); err != nil && ctx.Err() == nil {
			cnt.fail("http unlock", err)
			continue
		}
		cnt.httpLocks.Add(1)
	}
}

// soakScripts: distinct scripts (the script cache churns), a loaded
// script run by sha, and now and then a memory bomb that must be refused.
func soakScripts(ctx context.Context, rdb *redis.Client, w int, cnt *soakCounters) {
	for i := 0; ctx.Err() == nil; i++ {
		var err error
		switch {
		case i%200 == 199:
			err = rdb.Eval(ctx, soakBomb, nil).Err()
			if err == nil {
				cnt.fail("bomb", errors.New("a script allocating 2 GB succeeded"))
				continue
			}
			var rerr redis.Error
			if errors.As(err, &rerr) {
				cnt.bombsRefused.Add(1)
				cnt.ops.Add(1)
				continue
			}
		case i%2 == 0:
			err = rdb.Eval(ctx, fmt.Sprintf("return %d + #KEYS -- %d", i, w), []string{"soak:s"}).Err()
		default:
			err = hashAcquire.Run(ctx, rdb, []string{fmt.Sprintf("soak:hash:%d", rand.IntN(50))}, 5000, "owner-"+strconv.Itoa(w)).Err()
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, redis.Nil) {
			cnt.fail("script", err)
			continue
		}
		cnt.ops.Add(1)
		cnt.scripts.Add(1)
	}
}

// soakBigValues: 256 KiB values written and deleted.
func soakBigValues(ctx context.Context, rdb *redis.Client, w int, cnt *soakCounters) {
	val := strings.Repeat("v", 256<<10)
	for ctx.Err() == nil {
		key := fmt.Sprintf("soak:big:%d:%d", w, rand.IntN(20))
		if err := rdb.Set(ctx, key, val, time.Minute).Err(); err != nil {
			if ctx.Err() == nil {
				cnt.fail("big set", err)
			}
			continue
		}
		if err := rdb.Del(ctx, key).Err(); err != nil && ctx.Err() == nil {
			cnt.fail("big del", err)
			continue
		}
		cnt.ops.Add(2)
		cnt.bigValues.Add(1)
	}
}

// soakChurn: short-lived connections, RESP and HTTP, on every node.
func soakChurn(ctx context.Context, c *lnCluster, cnt *soakCounters) {
	for i := 0; ctx.Err() == nil; i++ {
		n := c.nodes[i%len(c.nodes)]
		if i%2 == 0 {
			conn, err := net.DialTimeout("tcp", n.resp, 2*time.Second)
			if err != nil {
				cnt.fail("dial resp", err)
				continue
			}
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Write([]byte("PING\r\n"))
			if err == nil {
				_, err = bufio.NewReader(conn).ReadString('\n')
			}
			conn.Close()
			if err != nil && ctx.Err() == nil {
				cnt.fail("resp ping", err)
				continue
			}
		} else {
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := hc.Get("http://" + n.http + "/v1/status")
			if err != nil {
				if ctx.Err() == nil {
					cnt.fail("http status", err)
				}
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cnt.ops.Add(1)
		cnt.dial.Add(1)
	}
}

// soakSubscriber reads everything published on soak:ch.
func soakSubscriber(ctx context.Context, addr string, cnt *soakCounters) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ps := rdb.Subscribe(ctx, "soak:ch")
	defer ps.Close()
	for ctx.Err() == nil {
		if _, err := ps.ReceiveMessage(ctx); err != nil {
			if ctx.Err() == nil {
				cnt.fail("subscriber", err)
			}
			continue
		}
		cnt.received.Add(1)
	}
}

// soakSlowSubscriber subscribes and never reads: the node must bound what
// it buffers for it (and may disconnect it); it resubscribes when dropped.
func soakSlowSubscriber(ctx context.Context, addr string, cnt *soakCounters) {
	for ctx.Err() == nil {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			cnt.fail("slow subscriber dial", err)
			return
		}
		if _, err := conn.Write([]byte("SUBSCRIBE soak:ch\r\n")); err != nil {
			conn.Close()
			continue
		}
		// Read nothing; notice a disconnect by a zero-byte peek now and then.
		for ctx.Err() == nil {
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			var one [1]byte
			_, err := conn.Read(one[:0])
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				cnt.slowDrop.Add(1)
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
		conn.Close()
	}
}

// soakPublisher publishes 1 KiB messages, about 200 a second, through
// every node in turn.
func soakPublisher(ctx context.Context, rdbs []*redis.Client, cnt *soakCounters) {
	msg := strings.Repeat("m", 1024)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := rdbs[i%len(rdbs)].Publish(ctx, "soak:ch", msg).Err(); err != nil {
			if ctx.Err() == nil {
				cnt.fail("publish", err)
			}
			continue
		}
		cnt.ops.Add(1)
		cnt.published.Add(1)
	}
}

// scrapeGauge reads one unlabelled gauge from a Prometheus text page (-1
// when it cannot).
func scrapeGauge(ctx context.Context, hc *http.Client, url, name string) float64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// soakWindow is the part of the run compared at each end: 10 minutes, or
// a third of a shorter run.
func soakWindow(d time.Duration) time.Duration { return min(10*time.Minute, d/3) }

// rssMedians returns each node's median RSS over the samples in [from, to) seconds.
func rssMedians(samples []soakSample, from, to float64) []int64 {
	if len(samples) == 0 {
		return nil
	}
	out := make([]int64, len(samples[0].RSS))
	for i := range out {
		var xs []int64
		for _, s := range samples {
			if s.At >= from && s.At < to && i < len(s.RSS) {
				xs = append(xs, s.RSS[i])
			}
		}
		if len(xs) > 0 {
			slices.Sort(xs)
			out[i] = xs[len(xs)/2]
		}
	}
	return out
}

func writeSoak(out, name string, d time.Duration, samples []soakSample, cnt *soakCounters) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	w := soakWindow(d).Seconds()
	end := d.Seconds() + 1
	first, last := rssMedians(samples, 0, w), rssMedians(samples, d.Seconds()-w, end)
	var worst float64
	for _, s := range samples {
		for _, p := range s.MaxPause {
			worst = max(worst, p)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %v of mixed load on 3 `locknode serve` processes\n\n", d)
	fmt.Fprintf(&b, "- %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- load: 12 RESP SET NX/compare-and-delete workers, 3 Go-client blocking lockers, 2 script workers (distinct EVALs, Redisson hash locks, a 2 GB memory bomb every 200th), 2 writers of 256 KiB values, connection churn (RESP and HTTP), 3 pub/sub subscribers and one that never reads, a publisher at ~200 msg/s; clients spread over all nodes\n")
	fmt.Fprintf(&b, "- operations: %d (lock cycles %d, HTTP lock cycles %d, scripts %d, bombs refused %d, big values %d, short connections %d, published %d, received %d, slow subscriber dropped %d times), errors %d\n",
		cnt.ops.Load(), cnt.locks.Load(), cnt.httpLocks.Load(), cnt.scripts.Load(), cnt.bombsRefused.Load(), cnt.bigValues.Load(), cnt.dial.Load(),
		cnt.published.Load(), cnt.received.Load(), cnt.slowDrop.Load(), cnt.errs.Load())
	if e, ok := cnt.lastErr.Load().(string); ok {
		fmt.Fprintf(&b, "- last error: %s\n", e)
	}
	fmt.Fprintf(&b, "\n| node | median RSS, first %.0f min | median RSS, last %.0f min | change | longest apply pause |\n|---|---|---|---|---|\n", w/60, w/60)
	for i := range first {
		var pause float64
		if n := len(samples); n > 0 && i < len(samples[n-1].MaxPause) {
			pause = samples[n-1].MaxPause[i]
		}
		fmt.Fprintf(&b, "| n%d | %.1f MB | %.1f MB | %+.1f %% | %.1f ms |\n", i+1, float64(first[i])/1e6, float64(last[i])/1e6,
			100*(float64(last[i])-float64(first[i]))/max(1, float64(first[i])), pause*1e3)
	}
	fmt.Fprintf(&b, "\nWorst apply pause on any node: %.1f ms.\n", worst*1e3)
	if err := os.WriteFile(filepath.Join(out, name+".md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, name+".jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, s := range samples {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	logf("soak: results in %s/%s.{md,jsonl}", out, name)
	fmt.Print(b.String())
	return nil
}
