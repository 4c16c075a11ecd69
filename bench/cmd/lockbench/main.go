// Command lockbench benchmarks locknode against peer lock services on
// this machine: it builds and starts everything itself on loopback
// (free ports, temporary directories), runs the workloads, stops every
// process it started, and writes a markdown table, an SVG chart and JSON
// lines under results/.
//
//	go run ./cmd/lockbench                # locknode only (make bench)
//	go run ./cmd/lockbench -compare       # locknode and peers, median of 3 (make bench-compare)
//
// Backends: locknode (3 `locknode serve` processes, default config, fsync
// on) over RESP (go-redis: SET NX PX + compare-and-delete EVALSHA;
// LOCK.ACQUIRE ... WAIT when contended) and over HTTP (the Go client);
// redis without AOF and with appendfsync always; Redlock over 3 redis
// (redsync); etcd 3.4 with 1 and 3 nodes (clientv3/concurrency.Mutex).
// Missing redis-server/etcd are installed with apt-get when running as
// root; otherwise that backend is skipped with the reason.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s lockbench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

type options struct {
	compare        bool
	backends       string
	runs           int
	duration       time.Duration
	warmup         time.Duration
	concurrency    string
	contended      int
	scriptWorkers  int
	failoverRuns   int
	failoverWork   int
	failoverLimit  time.Duration
	scaleLocks     int
	scaleRedis     bool
	snapWait       time.Duration
	keep           bool
	exclusive      string // flock file taken for the whole run ("" none)
	scaleFill      string
	scaleTargets   string
	install        bool
	out            string
	name           string
	repo           string
	locknodeBin    string
	baseBin        string
	skipWorkloads  string
	settings       settings
	pollMin, pollM time.Duration
	soak           time.Duration // run only the soak workload, this long
	hold           holdOpts      // the holding workload
	soakEvery      time.Duration
}

// A locknode backend's clients send to the nodes -targets names; with a
// suffix @leader or @follower, to the leader only or to the followers
// only, whatever -targets says.
var allBackends = []string{"locknode-resp", "locknode-resp@leader", "locknode-resp@follower",
	"locknode-http", "locknode-http@leader", "locknode-http@follower",
	"redis", "redis-aof", "redlock-3-redis", "etcd-1node", "etcd-3node"}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.BoolVar(&o.compare, "compare", false, "run locknode and every peer backend (default: locknode only)")
	flag.StringVar(&o.backends, "backends", "", "comma-separated backends (default: locknode-resp,locknode-http; with -compare all of "+strings.Join(allBackends, ",")+")")
	flag.IntVar(&o.runs, "runs", 0, "runs of each backend, alternating; the median is reported (default 1, with -compare 3)")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "measuring window of each workload phase")
	flag.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "unmeasured warm-up before each window")
	flag.StringVar(&o.concurrency, "concurrency", "1,16,64", "worker counts of the uncontended workload")
	flag.IntVar(&o.contended, "contended-workers", 16, "workers of the contended workload (one lock, hold 0)")
	flag.IntVar(&o.scriptWorkers, "script-workers", 16, "workers of the scripts workload")
	flag.IntVar(&o.failoverRuns, "failover-runs", 5, "leader kills (locknode); 0 skips the failover workload")
	flag.IntVar(&o.failoverWork, "failover-workers", 16, "workers cycling locks during the failover workload")
	flag.DurationVar(&o.failoverLimit, "failover-limit", 15*time.Second, "give up waiting for every worker after a kill after this long")
	flag.IntVar(&o.scaleLocks, "scale-locks", 1_000_000, "held locks of the scale workload; 0 skips it")
	flag.BoolVar(&o.scaleRedis, "scale-redis", false, "also run the scale workload on redis (default: with -compare)")
	flag.StringVar(&o.scaleFill, "scale-fill", "script", "how the scale workload takes its locks: script (EVAL of SET NX PX per key, 100 keys per entry) or set (one pipelined SET NX PX per lock)")
	flag.StringVar(&o.scaleTargets, "scale-targets", "follower", "which nodes the scale workload's fill connections send to: follower, spread or leader")
	flag.DurationVar(&o.snapWait, "snapshot-wait", 90*time.Second, "longest wait for a snapshot holding every lock (scale)")
	flag.BoolVar(&o.install, "install", true, "apt-get install missing redis-server / etcd-server when root")
	flag.StringVar(&o.out, "out", "results", "directory of the results")
	flag.StringVar(&o.name, "name", "", "base name of the result files (default: locknode, or compare with -compare)")
	flag.StringVar(&o.repo, "repo", "..", "locknode repository (built with go build ./cmd/locknode)")
	flag.StringVar(&o.locknodeBin, "locknode-bin", "", "use this locknode binary instead of building one")
	flag.StringVar(&o.baseBin, "baseline-bin", "", "a second locknode binary: backends named with the suffix ~base (locknode-resp@follower~base) run it, alternating with the others, to compare two builds in one invocation")
	flag.StringVar(&o.skipWorkloads, "skip", "", "comma-separated workloads to skip: uncontended,contended,pipeline,scripts,holding,failover,scale")
	flag.IntVar(&o.hold.locks, "hold-locks", 10000, "held locks of the holding workload (renewed at TTL/3); 0 skips it")
	flag.DurationVar(&o.hold.ttl, "hold-ttl", 30*time.Second, "lease of the holding workload's locks and sessions; each is renewed every third of it")
	flag.DurationVar(&o.hold.window, "hold-duration", 20*time.Second, "measuring window of the holding workload (after -warmup)")
	flag.StringVar(&o.hold.script, "hold-script", "redsync", "the RESP holding workload's locks: redsync (SET NX PX, renewed by redsync's Extend script) or redisson (Redisson's hash lock, renewed by its watchdog's script)")
	flag.IntVar(&o.hold.senders, "hold-senders", 12, "concurrent renewal requests of the holding workload (pipelines of 100, or keep-alives)")
	flag.DurationVar(&o.settings.ttl, "ttl", 10*time.Second, "lease of every benchmark lock")
	flag.DurationVar(&o.pollMin, "poll-min", time.Millisecond, "shortest retry delay of polling clients (redis SET NX, redsync) when contended")
	flag.DurationVar(&o.pollM, "poll-max", 10*time.Millisecond, "longest retry delay of polling clients")
	flag.StringVar(&o.settings.lnTargets, "targets", "spread", "which nodes the locknode and etcd clients send to: spread (every node, as a load balancer does), leader, or follower (locknode only)")
	flag.IntVar(&nodePprofBase, "node-pprof-base", 0, "if not 0, node i serves net/http/pprof on 127.0.0.1:base+i (to profile a workload)")
	flag.StringVar(&nodeLogLevel, "node-log-level", "warn", "--log-level of the locknode processes (their logs are in the temp dir; see -keep)")
	flag.StringVar(&o.exclusive, "exclusive", "/tmp/lockbench.lock", "wait for this file's lock (flock) before measuring, so two runs on one machine do not skew each other; empty: don't")
	flag.DurationVar(&o.soak, "soak", 0, "run only the soak workload for this long (mixed load on 3 nodes, RSS and apply pauses sampled; make soak)")
	flag.DurationVar(&o.soakEvery, "soak-every", 10*time.Second, "sampling interval of the soak workload")
	flag.BoolVar(&lnTLS, "tls", false, "run the locknode clusters with TLS on every port (HTTP and RESP, mutual TLS between nodes; a throwaway CA)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (server data and logs) and print its path")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockbench: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if o.runs == 0 {
		o.runs = 1
		if o.compare {
			o.runs = 3
		}
	}
	if o.name == "" {
		o.name = "locknode"
		if o.soak > 0 {
			o.name = "soak"
		}
		if o.compare {
			o.name = "compare"
		}
	}
	if o.compare && !flagSet("scale-redis") {
		o.scaleRedis = true
	}
	if o.hold.script != "redsync" && o.hold.script != "redisson" {
		fmt.Fprintln(os.Stderr, "lockbench: -hold-script must be redsync or redisson")
		return 2
	}
	if o.scaleFill != "script" && o.scaleFill != "set" {
		fmt.Fprintln(os.Stderr, "lockbench: -scale-fill must be script or set")
		return 2
	}
	if !contains([]string{"leader", "spread", "follower"}, o.scaleTargets) {
		fmt.Fprintln(os.Stderr, "lockbench: -scale-targets must be spread, leader or follower")
		return 2
	}
	if !contains([]string{"leader", "spread", "follower"}, o.settings.lnTargets) {
		fmt.Fprintln(os.Stderr, "lockbench: -targets must be spread, leader or follower")
		return 2
	}
	o.settings.pollMin, o.settings.pollMax = o.pollMin, o.pollM
	var cs []int
	for _, f := range strings.Split(o.concurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "lockbench: -concurrency: bad worker count %q\n", f)
			return 2
		}
		cs = append(cs, n)
		o.settings.workers = max(o.settings.workers, n)
	}
	o.settings.workers = max(o.settings.workers, o.contended, o.scriptWorkers, o.failoverWork)
	names := []string{"locknode-resp", "locknode-http"}
	if o.compare {
		names = allBackends
	}
	if o.backends != "" {
		names = strings.Split(o.backends, ",")
		for _, n := range names {
			base, variant, _ := strings.Cut(n, "~")
			isBase := variant == "base"
			if isBase && o.baseBin == "" {
				fmt.Fprintf(os.Stderr, "lockbench: backend %q needs -baseline-bin\n", n)
				return 2
			}
			if _, ok := traceVariant(variant); variant != "" && !isBase && !ok {
				fmt.Fprintf(os.Stderr, "lockbench: backend %q: unknown variant ~%s (~base, or ~traceP: tracing at P %% to a local OTLP receiver)\n", n, variant)
				return 2
			}
			if !contains(allBackends, base) || (variant != "" && !strings.HasPrefix(base, "locknode-")) {
				fmt.Fprintf(os.Stderr, "lockbench: unknown backend %q (known: %s)\n", n, strings.Join(allBackends, ","))
				return 2
			}
		}
	}
	skip := map[string]bool{}
	for _, s := range strings.Split(o.skipWorkloads, ",") {
		if s = strings.TrimSpace(s); s != "" {
			skip[s] = true
		}
	}
	if lnTLS && !skip["scale"] && o.scaleLocks > 0 {
		fmt.Fprintln(os.Stderr, "lockbench: -tls does not cover the scale workload; add -skip scale or -scale-locks 0")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.exclusive != "" {
		unlock, err := lockMachine(ctx, o.exclusive)
		if err != nil {
			logf("-exclusive: %v", err)
			return 1
		}
		defer unlock()
	}
	defer killAll()
	tmp, err := os.MkdirTemp("", "lockbench-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer func() {
		if o.keep {
			logf("kept %s", tmp)
			return
		}
		os.RemoveAll(tmp)
	}()

	rep := &report{opts: &o, start: time.Now()}
	rep.meta = collectMeta(o.repo)
	rep.meta.Fsync = probeFsync(tmp, 300)
	argv := append([]string{os.Args[0]}, os.Args[1:]...)
	if strings.Contains(argv[0], "go-build") { // go run's temporary binary
		argv[0] = "go run ./cmd/lockbench"
	}
	rep.meta.Command = strings.Join(argv, " ")
	if wd, err := os.Getwd(); err == nil {
		rep.meta.Dir = wd
	}

	// Binaries.
	if o.locknodeBin != "" {
		o.settings.locknode = o.locknodeBin
	} else {
		o.settings.locknode = filepath.Join(tmp, "locknode")
		logf("building locknode from %s", o.repo)
		c := exec.Command("go", "build", "-o", o.settings.locknode, "./cmd/locknode")
		c.Dir = o.repo
		if out, err := c.CombinedOutput(); err != nil {
			logf("go build ./cmd/locknode failed: %v\n%s", err, out)
			return 1
		}
	}
	if o.soak > 0 {
		dir, _ := os.MkdirTemp(tmp, "soak-")
		if err := soak(ctx, &o.settings, dir, o.soak, o.soakEvery, o.out, o.name); err != nil {
			logf("%v", err)
			return 1
		}
		return 0
	}
	needRedis := containsAny(names, "redis", "redis-aof", "redlock-3-redis") || (o.scaleRedis && !skip["scale"])
	if needRedis {
		if p, err := ensureBinary("redis-server", "redis-server", o.install); err != nil {
			logf("SKIPPING redis backends: %v", err)
			rep.skipped = append(rep.skipped, "redis, redis-aof, redlock-3-redis: "+err.Error())
			names = remove(names, "redis", "redis-aof", "redlock-3-redis")
			o.scaleRedis = false
		} else {
			o.settings.redisBin = p
		}
	}
	if containsAny(names, "etcd-1node", "etcd-3node") {
		if p, err := ensureBinary("etcd", "etcd-server", o.install); err != nil {
			logf("SKIPPING etcd backends: %v", err)
			rep.skipped = append(rep.skipped, "etcd-1node, etcd-3node: "+err.Error())
			names = remove(names, "etcd-1node", "etcd-3node")
		} else {
			o.settings.etcdBin = p
		}
	}
	rep.meta.Versions = versions(o.settings.redisBin, o.settings.etcdBin, o.repo)
	rep.backends = names

	// Alternating runs: every backend once per round.
	for run := 1; run <= o.runs && ctx.Err() == nil; run++ {
		for _, name := range names {
			if ctx.Err() != nil {
				break
			}
			b := newBackend(name, &o.settings, o.baseBin)
			dir, _ := os.MkdirTemp(tmp, name+"-")
			logf("run %d/%d: %s: starting", run, o.runs, name)
			res, cmds, err := benchBackend(ctx, b, dir, &o, cs, skip)
			rep.commands(name, cmds)
			for _, r := range res {
				r.Type, r.Run = "run", run
				r.Metrics["loadavg_1m"] = loadavg1()
				rep.add(r)
			}
			if err != nil {
				logf("run %d: %s: %v", run, name, err)
				rep.failures = append(rep.failures, fmt.Sprintf("run %d %s: %v", run, name, err))
			}
			if !o.keep {
				os.RemoveAll(dir)
			}
		}
	}
	foCases := failoverCases(names, o.settings.lnTargets)
	if !skip["failover"] && o.failoverRuns > 0 && ctx.Err() == nil && len(foCases) > 0 {
		dir, _ := os.MkdirTemp(tmp, "failover-")
		logf("failover: %d leader kills under load for each of %d client placements", o.failoverRuns, len(foCases))
		res, cmds, err := failover(ctx, &o.settings, dir, o.failoverRuns, o.failoverWork, o.failoverLimit, foCases)
		rep.commands("failover", cmds)
		for _, r := range res {
			r.Type = "run"
			rep.add(r)
		}
		if err != nil {
			logf("failover: %v", err)
			rep.failures = append(rep.failures, "failover: "+err.Error())
		}
		killAll()
		os.RemoveAll(dir)
	}
	if !skip["scale"] && o.scaleLocks > 0 && ctx.Err() == nil && len(foCases) > 0 {
		dir, _ := os.MkdirTemp(tmp, "scale-")
		logf("scale: %d held locks on locknode", o.scaleLocks)
		r, cmds, err := scaleLocknode(ctx, &o.settings, dir, o.scaleLocks, o.snapWait, o.scaleFill == "script", o.scaleTargets)
		rep.commands("scale-locknode", cmds)
		rep.add(r)
		if err != nil {
			logf("scale: %v", err)
			rep.failures = append(rep.failures, "scale locknode: "+err.Error())
		}
		killAll()
		if !o.keep {
			os.RemoveAll(dir)
		}
		if o.scaleRedis && ctx.Err() == nil {
			dir, _ := os.MkdirTemp(tmp, "scale-redis-")
			r, cmds, err := scaleRedis(ctx, &o.settings, dir, o.scaleLocks)
			rep.commands("scale-redis", cmds)
			rep.add(r)
			if err != nil {
				rep.failures = append(rep.failures, "scale redis: "+err.Error())
			}
			killAll()
			os.RemoveAll(dir)
		}
	}
	if ctx.Err() != nil {
		logf("interrupted; writing what was measured")
		rep.failures = append(rep.failures, "interrupted: the phase that was running when the signal came is incomplete")
	}
	rep.elapsed = time.Since(rep.start)
	if err := rep.write(o.out, o.name); err != nil {
		logf("writing results: %v", err)
		return 1
	}
	if st := otlpSinkStats(); st != "" {
		logf("%s", st)
	}
	logf("done in %v; results in %s/%s.{md,svg,jsonl}", rep.elapsed.Round(time.Second), o.out, o.name)
	if len(rep.failures) > 0 {
		return 1
	}
	return 0
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsAny(xs []string, ys ...string) bool {
	for _, y := range ys {
		if contains(xs, y) {
			return true
		}
	}
	return false
}

func remove(xs []string, drop ...string) []string {
	var out []string
	for _, x := range xs {
		if !contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

func newBackend(name string, s *settings, baseBin string) backend {
	core, variant, _ := strings.Cut(name, "~")
	base, targets, ok := strings.Cut(core, "@")
	if ok || variant != "" {
		c := *s
		if ok {
			c.lnTargets = targets
		}
		if variant == "base" {
			c.locknode = baseBin
		}
		if ratio, ok := traceVariant(variant); ok {
			c.nodeArgs = []string{"--otlp-endpoint", otlpSinkURL(), "--trace-sample-ratio", ratio}
		}
		s = &c
	}
	switch base {
	case "locknode-resp":
		return &respBackend{label: name, s: s, ln: true, native: true}
	case "locknode-http":
		return &lnHTTPBackend{label: name, s: s}
	case "redis":
		return &respBackend{label: name, s: s}
	case "redis-aof":
		return &respBackend{label: name, s: s, aof: true}
	case "redlock-3-redis":
		return &redlockBackend{s: s}
	case "etcd-1node":
		return &etcdBackend{s: s, n: 1}
	case "etcd-3node":
		return &etcdBackend{s: s, n: 3}
	}
	panic("unknown backend " + name) // names are checked in run
}

// clustered is a backend on a locknode cluster.
type clustered interface{ cluster() *lnCluster }

func (b *respBackend) cluster() *lnCluster   { return b.lnc }
func (b *lnHTTPBackend) cluster() *lnCluster { return b.lnc }

// withPath runs one workload phase and, on a locknode cluster, adds the
// forwarding and log-write figures of the phase (addPathMetrics) to its
// result. A failed scrape leaves them out and says so.
func withPath(ctx context.Context, b backend, phase func() (result, error)) (result, error) {
	cpu0 := sampleCPU(b)
	r, err := withNodeMetrics(ctx, b, phase)
	if err == nil {
		addCPUMetrics(r.Metrics, cpu0, sampleCPU(b))
		logf("  %s %s: servers %.0f µs CPU per operation (/proc), client %.0f µs", b.name(), r.Workload,
			r.Metrics["servers_cpu_us_per_op"], r.Metrics["client_cpu_us_per_op"])
	}
	return r, err
}

// withNodeMetrics runs phase and adds a locknode cluster's counters of it.
func withNodeMetrics(ctx context.Context, b backend, phase func() (result, error)) (result, error) {
	cb, ok := b.(clustered)
	if !ok || cb.cluster() == nil {
		return phase()
	}
	c := cb.cluster()
	before, serr := c.sample(ctx)
	r, err := phase()
	if err != nil {
		return r, err
	}
	var after clusterSample
	if serr == nil {
		after, serr = c.sample(ctx)
	}
	if serr != nil {
		logf("  %s %s: node metrics: %v", b.name(), r.Workload, serr)
		return r, nil
	}
	addPathMetrics(r.Metrics, before, after)
	// The phase's operations: cycles, acquisitions or pipelined commands.
	if v := opsRate(r.Metrics); v > 0 {
		r.Metrics["nodes_cpu_us_per_op"] = 1e6 * r.Metrics["nodes_cpu_cores"] / v
	}
	logf("  %s %s: %.0f forwarding calls/s, %.1f commands per call; leader %.0f log writes/s, %.1f commands per write, %.2f ms per write; nodes %.2f cores (leader %.2f), %.0f µs per operation",
		b.name(), r.Workload, r.Metrics["fwd_calls_per_s"], r.Metrics["fwd_cmds_per_call"],
		r.Metrics["leader_log_writes_per_s"], r.Metrics["leader_cmds_per_log_write"], r.Metrics["leader_log_write_mean_ms"],
		r.Metrics["nodes_cpu_cores"], r.Metrics["leader_cpu_cores"], r.Metrics["nodes_cpu_us_per_op"])
	return r, nil
}

// benchBackend starts b, runs every workload on it, and stops it.
func benchBackend(ctx context.Context, b backend, dir string, o *options, cs []int, skip map[string]bool) ([]result, []string, error) {
	defer b.stop()
	if err := b.start(ctx, dir); err != nil {
		return nil, b.commands(), fmt.Errorf("start: %w", err)
	}
	var out []result
	var errs []error
	if !skip["uncontended"] {
		for _, c := range cs {
			r, err := withPath(ctx, b, func() (result, error) { return uncontended(ctx, b, c, o.warmup, o.duration) })
			if err != nil {
				errs = append(errs, err)
				continue
			}
			logf("  %s %s: %.0f cycles/s, acquire p50 %.3f ms p99 %.3f ms, %.2f req/cycle, %d errors", b.name(), r.Workload,
				r.Metrics["cycles_per_s"], r.Metrics["acquire_p50_ms"], r.Metrics["acquire_p99_ms"], r.Metrics["requests_per_cycle"], r.Errors)
			out = append(out, r)
		}
	}
	if !skip["contended"] {
		r, err := withPath(ctx, b, func() (result, error) { return contended(ctx, b, o.contended, o.warmup, o.duration) })
		if err != nil {
			errs = append(errs, err)
		} else {
			logf("  %s %s: %.0f acq/s, wait p50 %.2f p99 %.2f max %.2f ms, %.3f req/acq, fairness %v..%v, %d errors", b.name(), r.Workload,
				r.Metrics["acquisitions_per_s"], r.Metrics["wait_p50_ms"], r.Metrics["wait_p99_ms"], r.Metrics["wait_max_ms"],
				r.Metrics["requests_per_acquisition"], r.Metrics["fair_min"], r.Metrics["fair_max"], r.Errors)
			out = append(out, r)
		}
	}
	if !skip["pipeline"] {
		if rb, ok := b.(*respBackend); ok {
			r, err := withPath(ctx, b, func() (result, error) { return pipelined(ctx, rb, o.warmup, o.duration) })
			if err != nil {
				errs = append(errs, err)
			} else {
				logf("  %s %s: %.0f SET NX/s, %d errors", b.name(), r.Workload, r.Metrics["ops_per_s"], r.Errors)
				out = append(out, r)
			}
		}
	}
	if !skip["scripts"] {
		if _, ok := b.(*respBackend); ok {
			rs, err := scripts(ctx, b, o.scriptWorkers, o.warmup, o.duration)
			if err != nil {
				errs = append(errs, err)
			}
			for _, r := range rs {
				logf("  %s %s: %.0f cycles/s, acquire p50 %.3f ms, %d errors", b.name(), r.Workload, r.Metrics["cycles_per_s"], r.Metrics["acquire_p50_ms"], r.Errors)
			}
			out = append(out, rs...)
		}
	}
	if !skip["holding"] && o.hold.locks > 0 {
		ho := o.hold
		ho.warmup = o.warmup
		measure := func(phase func() (result, error)) (result, error) { return withPath(ctx, b, phase) }
		var r result
		var err error
		ran := true
		switch x := b.(type) {
		case *respBackend:
			r, err = holdingRESP(ctx, x, ho, measure)
		case *lnHTTPBackend:
			r, err = holdingSessions(ctx, x, ho, measure)
		case *etcdBackend:
			r, err = holdingEtcd(ctx, x, ho, measure)
		default:
			ran = false
		}
		switch {
		case !ran:
		case err != nil:
			errs = append(errs, fmt.Errorf("holding: %w", err))
		default:
			logf("  %s %s: %.0f renewals/s, request p50 %.2f p99 %.2f p99.9 %.2f ms, %v late, %v lost, %d errors; leader %.0f entries/s; servers %.3f cores, %.1f µs per renewal",
				b.name(), r.Workload, r.Metrics["renewals_per_s"], r.Metrics["renew_p50_ms"], r.Metrics["renew_p99_ms"], r.Metrics["renew_p999_ms"],
				r.Metrics["late"], r.Metrics["lost"], r.Errors, r.Metrics["leader_entries_per_s"], r.Metrics["servers_cpu_cores"], r.Metrics["servers_cpu_us_per_op"])
			out = append(out, r)
		}
	}
	return out, b.commands(), errors.Join(errs...)
}
