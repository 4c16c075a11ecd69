package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// errBusy: a non-blocking acquire found the lock held.
var errBusy = errors.New("lock held by another owner")

// backend is one system under test. start launches its servers (and
// clients) in dir; workers are created after start.
type backend interface {
	name() string
	start(ctx context.Context, dir string) error
	stop()
	newWorker(ctx context.Context, i int) (worker, error)
	// requests is the number of requests all clients sent so far,
	// counted client-side (RESP commands, HTTP round trips, gRPC unary
	// calls and stream messages).
	requests() int64
	// commands are the exact server command lines, for the record.
	commands() []string
}

// worker is one benchmark goroutine's lock client.
type worker interface {
	// acquire takes a free lock in one attempt (errBusy if held).
	acquire(ctx context.Context, key string) error
	// acquireWait blocks until the lock is granted (the backend's own way:
	// queueing, watching or polling).
	acquireWait(ctx context.Context, key string) error
	release(ctx context.Context, key string) error
	close()
}

// scripter is a RESP backend worker that can run the Redisson-shape
// reentrant hash lock.
type scripter interface {
	hashAcquire(ctx context.Context, key string) error
	hashRelease(ctx context.Context, key string) error
}

// settings shared by every backend.
type settings struct {
	ttl       time.Duration // lease of every lock
	pollMin   time.Duration // retry delay range of polling clients
	pollMax   time.Duration
	workers   int // most workers any workload uses (pool sizes)
	redisBin  string
	etcdBin   string
	locknode  string   // built binary
	lnTargets string   // "leader": clients talk to the leader; "follower": to the followers; "spread": round-robin over nodes
	nodeArgs  []string // more `locknode serve` flags (a ~trace variant's)
}

func pollDelay(s *settings) time.Duration {
	if s.pollMax <= s.pollMin {
		return s.pollMin
	}
	return s.pollMin + rand.N(s.pollMax-s.pollMin)
}

var tokenSeq atomic.Int64

func newToken(w int) string {
	return fmt.Sprintf("w%d-%d-%x", w, tokenSeq.Add(1), rand.Uint32())
}

// --- counting -----------------------------------------------------------

// countHook counts every command go-redis sends (pipelines count each
// command).
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// countRT counts HTTP round trips.
type countRT struct {
	n    *atomic.Int64
	base http.RoundTripper
}

func (c countRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// --- RESP: redis and locknode ------------------------------------------

const cadScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// Redisson-shape reentrant hash lock (RedissonLock's tryLockInner and
// unlockInner, written here): the hash field is the owner, its value the
// hold count; unlock publishes on the lock's channel.
const hashAcquireScript = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

const hashReleaseScript = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
return nil;`

var (
	cad         = redis.NewScript(cadScript)
	hashAcquire = redis.NewScript(hashAcquireScript)
	hashRelease = redis.NewScript(hashReleaseScript)
)

// respBackend is redis (optionally AOF fsync always) or locknode over
// RESP; both are driven by go-redis the same way.
type respBackend struct {
	label  string
	s      *settings
	aof    bool
	ln     bool       // locknode cluster instead of redis-server
	lnc    *lnCluster // when ln
	redis  *proc      // when !ln
	argv   []string
	addrs  []string // client targets
	rdbs   []*redis.Client
	count  atomic.Int64
	native bool // contended acquire uses LOCK.ACQUIRE ... WAIT
}

func (b *respBackend) name() string       { return b.label }
func (b *respBackend) requests() int64    { return b.count.Load() }
func (b *respBackend) commands() []string { return b.argv }

func startRedis(ctx context.Context, s *settings, dir, name string, aof bool) (*proc, string, []string, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	rdir := filepath.Join(dir, name)
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return nil, "", nil, err
	}
	argv := []string{s.redisBin, "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", rdir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no"}
	if aof {
		argv = append(argv, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		argv = append(argv, "--appendonly", "no")
	}
	p, err := startProc(name, filepath.Join(dir, name+".log"), argv, nil, nil)
	if err != nil {
		return nil, "", nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	err = waitFor(ctx, 20*time.Second, name, func(ctx context.Context) error {
		if p.exited() {
			return fmt.Errorf("%s exited: %v", name, p.err)
		}
		return rdb.Ping(ctx).Err()
	})
	if err != nil {
		p.kill(syscall.SIGKILL, 0)
		return nil, "", nil, err
	}
	return p, addr, argv, nil
}

func (b *respBackend) newClient(addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:         addr,
		PoolSize:     b.s.workers + 8,
		MinIdleConns: 0,
		// LOCK.ACQUIRE ... WAIT blocks on the connection for up to the
		// wait; other commands answer quickly.
		ReadTimeout: 40 * time.Second,
		// Off: go-redis would otherwise probe CLIENT MAINT_NOTIFICATIONS.
		MaxRetries: 0,
		TLSConfig:  b.clientTLS(),
	})
	rdb.AddHook(countHook{&b.count})
	return rdb
}

// clientTLS is the TLS configuration of locknode clients with -tls.
func (b *respBackend) clientTLS() *tls.Config {
	if b.lnc == nil {
		return nil
	}
	return b.lnc.tls
}

func (b *respBackend) start(ctx context.Context, dir string) error {
	if b.ln {
		c, err := newLNCluster(b.s.locknode, dir, 3)
		if c != nil {
			c.extra = b.s.nodeArgs
		}
		if err != nil {
			return err
		}
		b.lnc = c
		if err := c.start(ctx); err != nil {
			return err
		}
		for i := range c.nodes {
			b.argv = append(b.argv, shellJoin(c.argv(i)))
		}
		b.argv = []string{strings.Join(b.argv, " & ")}
		targets, err := lnTargets(ctx, c, b.s.lnTargets)
		if err != nil {
			return err
		}
		for _, i := range targets {
			b.addrs = append(b.addrs, c.nodes[i].resp)
		}
	} else {
		p, addr, argv, err := startRedis(ctx, b.s, dir, b.label, b.aof)
		if err != nil {
			return err
		}
		b.redis, b.argv, b.addrs = p, []string{shellJoin(argv)}, []string{addr}
	}
	for _, a := range b.addrs {
		rdb := b.newClient(a)
		// Load the scripts so that EVALSHA never misses during a run.
		for _, sc := range []*redis.Script{cad, hashAcquire, hashRelease} {
			if err := sc.Load(ctx, rdb).Err(); err != nil {
				return fmt.Errorf("%s: SCRIPT LOAD: %w", b.label, err)
			}
		}
		b.rdbs = append(b.rdbs, rdb)
	}
	return nil
}

// lnTargets lists the node indexes clients use: the leader, the
// followers, or every node.
func lnTargets(ctx context.Context, c *lnCluster, mode string) ([]int, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	if mode == "follower" {
		var out []int
		for i := range c.nodes {
			if i != l {
				out = append(out, i)
			}
		}
		return out, nil
	}
	if mode == "spread" {
		out := []int{l}
		for i := range c.nodes {
			if i != l {
				out = append(out, i)
			}
		}
		return out, nil
	}
	return []int{l}, nil
}

func (b *respBackend) stop() {
	for _, r := range b.rdbs {
		r.Close()
	}
	if b.lnc != nil {
		b.lnc.stop()
	}
	if b.redis != nil {
		b.redis.kill(syscall.SIGTERM, 5*time.Second)
	}
}

func (b *respBackend) newWorker(ctx context.Context, i int) (worker, error) {
	return &respWorker{b: b, id: i, rdb: b.rdbs[i%len(b.rdbs)], tokens: map[string]string{}}, nil
}

type respWorker struct {
	b      *respBackend
	id     int
	rdb    *redis.Client
	tokens map[string]string // key → token of the current hold
	native map[string]bool   // key held through LOCK.ACQUIRE
}

func (w *respWorker) acquire(ctx context.Context, key string) error {
	tok := newToken(w.id)
	ok, err := w.rdb.SetNX(ctx, key, tok, w.b.s.ttl).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errBusy
	}
	w.tokens[key] = tok
	return nil
}

func (w *respWorker) acquireWait(ctx context.Context, key string) error {
	if w.b.native {
		tok := newToken(w.id)
		// Queues in the FSM; the grant answers this very request.
		err := w.rdb.Do(ctx, "LOCK.ACQUIRE", key, tok, w.b.s.ttl.Milliseconds(), "WAIT", 30000).Err()
		if err != nil {
			return err
		}
		w.tokens[key] = tok
		if w.native == nil {
			w.native = map[string]bool{}
		}
		w.native[key] = true
		return nil
	}
	for {
		err := w.acquire(ctx, key)
		if !errors.Is(err, errBusy) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollDelay(w.b.s)):
		}
	}
}

func (w *respWorker) release(ctx context.Context, key string) error {
	tok, ok := w.tokens[key]
	if !ok {
		return fmt.Errorf("release %s: not held", key)
	}
	delete(w.tokens, key)
	if w.native[key] {
		delete(w.native, key)
		n, err := w.rdb.Do(ctx, "LOCK.RELEASE", key, tok).Int()
		if err == nil && n != 1 {
			err = fmt.Errorf("LOCK.RELEASE %s answered %d", key, n)
		}
		return err
	}
	n, err := cad.EvalSha(ctx, w.rdb, []string{key}, tok).Int()
	if err == nil && n != 1 {
		err = fmt.Errorf("compare-and-delete %s answered %d", key, n)
	}
	return err
}

func (w *respWorker) hashAcquire(ctx context.Context, key string) error {
	tok := newToken(w.id)
	err := hashAcquire.EvalSha(ctx, w.rdb, []string{key}, w.b.s.ttl.Milliseconds(), tok).Err()
	if errors.Is(err, redis.Nil) { // nil = acquired (Redisson's convention)
		w.tokens[key] = tok
		return nil
	}
	if err == nil {
		return errBusy // the remaining TTL of someone else's hold
	}
	return err
}

func (w *respWorker) hashRelease(ctx context.Context, key string) error {
	tok, ok := w.tokens[key]
	if !ok {
		return fmt.Errorf("release %s: not held", key)
	}
	delete(w.tokens, key)
	n, err := hashRelease.EvalSha(ctx, w.rdb, []string{key, "redisson_lock__channel:{" + key + "}"}, 0, w.b.s.ttl.Milliseconds(), tok).Int()
	if err == nil && n != 1 {
		err = fmt.Errorf("hash release %s answered %d", key, n)
	}
	return err
}

func (w *respWorker) close() {}

// --- locknode over HTTP (the Go client) ---------------------------------

type lnHTTPBackend struct {
	label string
	s     *settings
	lnc   *lnCluster
	argv  []string
	cl    []*client.Client
	count atomic.Int64
}

func (b *lnHTTPBackend) name() string       { return b.label }
func (b *lnHTTPBackend) requests() int64    { return b.count.Load() }
func (b *lnHTTPBackend) commands() []string { return b.argv }

// httpClientFor is the harness's HTTP client for the Go client: the
// Go client's own default transport (client.NewTransport), wrapped to
// count requests, with an idle connection per worker and node kept (the
// default keeps 2, so 64 workers would re-dial).
// With -tls, client.NewTLSTransport (the same transport for https).
func httpClientFor(n *atomic.Int64, workers int, tc *tls.Config) *http.Client {
	if tc != nil {
		return &http.Client{Transport: countRT{n: n, base: client.NewTLSTransport(2*workers, tc)}}
	}
	return &http.Client{Transport: countRT{n: n, base: client.NewTransport(2 * workers)}}
}

func (b *lnHTTPBackend) start(ctx context.Context, dir string) error {
	c, err := newLNCluster(b.s.locknode, dir, 3)
	if c != nil {
		c.extra = b.s.nodeArgs
	}
	if err != nil {
		return err
	}
	b.lnc = c
	if err := c.start(ctx); err != nil {
		return err
	}
	var parts []string
	for i := range c.nodes {
		parts = append(parts, shellJoin(c.argv(i)))
	}
	b.argv = []string{strings.Join(parts, " & ")}
	targets, err := lnTargets(ctx, c, b.s.lnTargets)
	if err != nil {
		return err
	}
	hc := httpClientFor(&b.count, b.s.workers, c.tls)
	for _, t := range targets {
		// Every endpoint is listed (fail-over), starting at the target.
		cl, err := client.New(client.Config{Endpoints: c.httpURLs(t), HTTPClient: hc})
		if err != nil {
			return err
		}
		b.cl = append(b.cl, cl)
	}
	return nil
}

func (b *lnHTTPBackend) stop() {
	if b.lnc != nil {
		b.lnc.stop()
	}
}

func (b *lnHTTPBackend) newWorker(ctx context.Context, i int) (worker, error) {
	return &httpWorker{c: b.cl[i%len(b.cl)], id: i, ttl: b.s.ttl, tokens: map[string]string{}}, nil
}

type httpWorker struct {
	c      *client.Client
	id     int
	ttl    time.Duration
	tokens map[string]string
}

func (w *httpWorker) acquire(ctx context.Context, key string) error {
	tok := newToken(w.id)
	_, err := w.c.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: tok, TTLMs: w.ttl.Milliseconds()})
	if errors.Is(err, api.ErrLocked) {
		return errBusy
	}
	if err == nil {
		w.tokens[key] = tok
	}
	return err
}

func (w *httpWorker) acquireWait(ctx context.Context, key string) error {
	tok := newToken(w.id)
	// A long poll: the FSM queues the waiter and the grant answers it.
	_, err := w.c.Acquire(ctx, api.AcquireRequest{Key: key, Owner: tok, TTLMs: w.ttl.Milliseconds(), WaitMs: 30000})
	if err == nil {
		w.tokens[key] = tok
	}
	return err
}

func (w *httpWorker) release(ctx context.Context, key string) error {
	tok, ok := w.tokens[key]
	if !ok {
		return fmt.Errorf("release %s: not held", key)
	}
	delete(w.tokens, key)
	res, err := w.c.Release(ctx, api.ReleaseRequest{Key: key, Owner: tok})
	if err == nil && !res.Released {
		err = fmt.Errorf("release %s: not released", key)
	}
	return err
}

func (w *httpWorker) close() {}

// --- Redlock over 3 redis (redsync) -------------------------------------

type redlockBackend struct {
	s     *settings
	procs []*proc
	argv  []string
	rdbs  []*redis.Client
	rs    *redsync.Redsync
	count atomic.Int64
}

func (b *redlockBackend) name() string       { return "redlock-3-redis" }
func (b *redlockBackend) requests() int64    { return b.count.Load() }
func (b *redlockBackend) commands() []string { return b.argv }

func (b *redlockBackend) start(ctx context.Context, dir string) error {
	var pools []rsredis.Pool
	for i := 0; i < 3; i++ {
		p, addr, argv, err := startRedis(ctx, b.s, dir, fmt.Sprintf("redlock-%d", i+1), false)
		if err != nil {
			return err
		}
		b.procs = append(b.procs, p)
		b.argv = append(b.argv, shellJoin(argv))
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: b.s.workers + 8, MaxRetries: 0})
		rdb.AddHook(countHook{&b.count})
		b.rdbs = append(b.rdbs, rdb)
		pools = append(pools, rsgoredis.NewPool(rdb))
	}
	b.rs = redsync.New(pools...)
	return nil
}

func (b *redlockBackend) stop() {
	for _, r := range b.rdbs {
		r.Close()
	}
	for _, p := range b.procs {
		p.kill(syscall.SIGTERM, 5*time.Second)
	}
}

func (b *redlockBackend) newWorker(ctx context.Context, i int) (worker, error) {
	return &redlockWorker{b: b, held: map[string]*redsync.Mutex{}}, nil
}

type redlockWorker struct {
	b    *redlockBackend
	held map[string]*redsync.Mutex
}

func (w *redlockWorker) lock(ctx context.Context, key string, tries int) error {
	m := w.b.rs.NewMutex(key, redsync.WithExpiry(w.b.s.ttl), redsync.WithTries(tries),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return pollDelay(w.b.s) }))
	if err := m.LockContext(ctx); err != nil {
		var taken *redsync.ErrTaken
		if tries == 1 && (errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken)) {
			return errBusy
		}
		return err
	}
	w.held[key] = m
	return nil
}

func (w *redlockWorker) acquire(ctx context.Context, key string) error {
	return w.lock(ctx, key, 1)
}

func (w *redlockWorker) acquireWait(ctx context.Context, key string) error {
	return w.lock(ctx, key, 1<<30)
}

func (w *redlockWorker) release(ctx context.Context, key string) error {
	m, ok := w.held[key]
	if !ok {
		return fmt.Errorf("release %s: not held", key)
	}
	delete(w.held, key)
	ok, err := m.UnlockContext(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("redsync unlock %s: no quorum", key)
	}
	return err
}

func (w *redlockWorker) close() {}

// --- etcd (3.4 server, clientv3/concurrency) ----------------------------

type etcdBackend struct {
	s     *settings
	n     int
	procs []*proc
	argv  []string
	eps   []string
	cli   *clientv3.Client
	count atomic.Int64
}

func (b *etcdBackend) name() string       { return fmt.Sprintf("etcd-%dnode", b.n) }
func (b *etcdBackend) requests() int64    { return b.count.Load() }
func (b *etcdBackend) commands() []string { return b.argv }

func (b *etcdBackend) start(ctx context.Context, dir string) error {
	ports, err := freePorts(2 * b.n)
	if err != nil {
		return err
	}
	var initial []string
	for i := 0; i < b.n; i++ {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	for i := 0; i < b.n; i++ {
		name := fmt.Sprintf("e%d", i+1)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		argv := []string{b.s.etcdBin, "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "lockbench", "--logger", "zap", "--log-level", "warn"}
		p, err := startProc("etcd-"+name, filepath.Join(dir, name+".log"), argv, nil, nil)
		if err != nil {
			return err
		}
		b.procs = append(b.procs, p)
		b.argv = append(b.argv, shellJoin(argv))
		b.eps = append(b.eps, client)
	}
	// A plain client to find the leader.
	probe, err := clientv3.New(clientv3.Config{Endpoints: b.eps, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer probe.Close()
	leaderEP := ""
	err = waitFor(ctx, 60*time.Second, b.name(), func(ctx context.Context) error {
		for _, p := range b.procs {
			if p.exited() {
				return fmt.Errorf("etcd exited: %v", p.err)
			}
		}
		var leaderID uint64
		ids := map[uint64]string{}
		for _, ep := range b.eps {
			st, err := probe.Status(ctx, ep)
			if err != nil {
				return err
			}
			if st.Leader == 0 {
				return errors.New("no leader")
			}
			leaderID = st.Leader
			ids[st.Header.MemberId] = ep
		}
		leaderEP = ids[leaderID]
		if leaderEP == "" {
			return errors.New("leader unknown")
		}
		_, err := probe.Put(ctx, "/lockbench/ready", "1")
		return err
	})
	if err != nil {
		return err
	}
	eps := b.eps
	if b.s.lnTargets != "spread" {
		eps = []string{leaderEP}
	}
	b.cli, err = clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				b.count.Add(1)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countStream{ClientStream: cs, n: &b.count}, nil
			}),
		},
	})
	return err
}

// countStream counts every message a client stream sends (a watch
// creation, a lease keep-alive).
type countStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s countStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}

func (b *etcdBackend) stop() {
	if b.cli != nil {
		b.cli.Close()
	}
	for _, p := range b.procs {
		p.kill(syscall.SIGTERM, 5*time.Second)
	}
}

func (b *etcdBackend) newWorker(ctx context.Context, i int) (worker, error) {
	// One session (lease) per worker, kept alive by the client: the
	// usual etcd lock set-up. Its keep-alives are counted as requests.
	sess, err := concurrency.NewSession(b.cli, concurrency.WithTTL(int(b.s.ttl.Seconds())), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return &etcdWorker{sess: sess, held: map[string]*concurrency.Mutex{}}, nil
}

type etcdWorker struct {
	sess *concurrency.Session
	held map[string]*concurrency.Mutex
}

func (w *etcdWorker) acquire(ctx context.Context, key string) error {
	m := concurrency.NewMutex(w.sess, "/lockbench/"+key)
	if err := m.TryLock(ctx); err != nil {
		if errors.Is(err, concurrency.ErrLocked) {
			return errBusy
		}
		return err
	}
	w.held[key] = m
	return nil
}

func (w *etcdWorker) acquireWait(ctx context.Context, key string) error {
	m := concurrency.NewMutex(w.sess, "/lockbench/"+key)
	if err := m.Lock(ctx); err != nil {
		return err
	}
	w.held[key] = m
	return nil
}

func (w *etcdWorker) release(ctx context.Context, key string) error {
	m, ok := w.held[key]
	if !ok {
		return fmt.Errorf("release %s: not held", key)
	}
	delete(w.held, key)
	return m.Unlock(ctx)
}

// close revokes the worker's lease.
func (w *etcdWorker) close() { _ = w.sess.Close() }
