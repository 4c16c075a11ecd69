// Command multiraft measures what running several raft groups of the
// lock service on one set of nodes costs and gives: N groups of the real
// node (cluster.Node: fsm.Table, the raft fork, the WAL log store) on 3
// nodes in this process, every group of a node on that node's one peer
// listener (Mux). Two phases:
//
//   - idle: 1, 16, 64 idle groups per node, with the product's timings
//     and with slower ones (quiescedConfig, deepConfig), measuring the
//     process's CPU, log entries, log writes and bytes written per second;
//   - throughput: uncontended acquire/release cycles through 1, 2 and 4
//     groups of one 4-group cluster, alternating, medians of the rounds.
//
// Results go to OUT/NAME.md and OUT/NAME.jsonl (docs/SCALING.md reads
// them). The product itself runs one group; this is the measurement
// docs/SCALING.md argues from.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

type options struct {
	phases     string
	nodes      int
	idleGroups []int
	profiles   []string
	settle     time.Duration
	window     time.Duration
	tpGroups   []int
	workers    []int
	spread     bool
	duration   time.Duration
	warmup     time.Duration
	rounds     int
	logStore   string
	dir        string
	out        string
	name       string
	logLevel   string
}

func main() {
	var o options
	var idle, tp string
	flag.StringVar(&o.phases, "phases", "idle,throughput", "phases to run: idle, throughput")
	flag.IntVar(&o.nodes, "nodes", 3, "nodes (each one shared listener)")
	flag.StringVar(&idle, "idle-groups", "1,16,64", "idle phase: groups per node")
	var profs string
	flag.StringVar(&profs, "idle-profiles", "default,quiesced,deep", "idle phase: timing profiles (default: the product's; quiesced: heartbeat every 600 ms; deep: every 2 s)")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "idle phase: time after every group has a leader before measuring")
	flag.DurationVar(&o.window, "window", 10*time.Second, "idle phase: measured window")
	flag.StringVar(&tp, "tp-groups", "1,2,4", "throughput phase: groups the workers' keys are spread over (the cluster runs the largest)")
	var workers string
	flag.StringVar(&workers, "workers", "64,256", "throughput phase: worker counts, each worker cycling its own lock")
	flag.BoolVar(&o.spread, "spread-leaders", true, "throughput phase: move group g's leadership to node g mod nodes first")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "throughput phase: measured window per run")
	flag.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "throughput phase: unmeasured warm-up per run")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; every configuration runs once per round, alternating; medians are reported")
	flag.StringVar(&o.logStore, "log-store", cluster.LogStoreWAL, "raft log store of every node: wal or bolt")
	flag.StringVar(&o.dir, "dir", "", "data directories (default: a new temporary directory, removed at the end)")
	flag.StringVar(&o.out, "out", "results", "directory of the result files")
	flag.StringVar(&o.name, "name", "multiraft-"+time.Now().UTC().Format("2006-01-02"), "result file name (without extension)")
	flag.StringVar(&o.logLevel, "log-level", "off", "log level of the nodes (off, error, warn, info)")
	flag.Parse()
	var err error
	if o.idleGroups, err = intList(idle); err != nil {
		fatal(fmt.Errorf("-idle-groups: %w", err))
	}
	for _, p := range strings.Split(profs, ",") {
		if _, ok := profiles[strings.TrimSpace(p)]; !ok {
			fatal(fmt.Errorf("-idle-profiles: unknown profile %q (default, quiesced, deep)", p))
		}
		o.profiles = append(o.profiles, strings.TrimSpace(p))
	}
	if o.tpGroups, err = intList(tp); err != nil {
		fatal(fmt.Errorf("-tp-groups: %w", err))
	}
	if o.workers, err = intListMax(workers, 1<<16); err != nil {
		fatal(fmt.Errorf("-workers: %w", err))
	}
	if o.rounds < 1 || o.nodes < 1 {
		fatal(errors.New("-rounds and -nodes must be at least 1"))
	}
	switch o.logLevel {
	case "off", "error", "warn", "info", "debug", "trace":
	default:
		fatal(fmt.Errorf("-log-level %q: want off, error, warn, info, debug or trace", o.logLevel))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "multiraft:", err)
	os.Exit(1)
}

func intList(s string) ([]int, error) { return intListMax(s, maxGroups) }

func intListMax(s string, limit int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > limit {
			return nil, fmt.Errorf("%q: want numbers 1..%d", f, limit)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// baseConfig is the product's default node configuration (what `locknode
// serve` runs), with the chosen log store.
func baseConfig(logStore string) cluster.Config {
	c := cluster.DefaultConfig()
	c.LogStore = logStore
	c.DataFreeWarn = cluster.DiskSpace{Off: true}
	return c
}

// quiescedConfig is what hashicorp/raft lets a group slow down to while
// it is idle, without changing raft: it has no quiescence of its own, so
// an idle group still heartbeats, only less often, and its leader still
// resends each follower an empty AppendEntries every CommitTimeout.
// HeartbeatTimeout and ElectionTimeout can be changed on a running raft
// (Raft.ReloadConfig); CommitTimeout only at start. locknode's own idle
// work slows with it: the clock-sync Tick (one log entry per interval)
// and the deadline check.
func quiescedConfig(logStore string) cluster.Config {
	c := baseConfig(logStore)
	c.HeartbeatTimeout = 3 * time.Second // the fork heartbeats every HT/5 to 2·HT/5: 0.6-1.2 s
	c.ElectionTimeout = 3 * time.Second
	c.LeaderLeaseTimeout = 2 * time.Second // must outlast the heartbeat period
	c.CommitTimeout = time.Second
	c.ClockSyncInterval = 30 * time.Second
	c.TickInterval = time.Second
	c.UpgradeCheckInterval = time.Minute
	c.WaiterLease = 15 * time.Second // must outlast 4 heartbeat timeouts
	return c
}

// deepConfig slows an idle group further: a heartbeat every 2-4 s, an
// empty AppendEntries every 5-10 s; a dead leader is noticed only after
// 10-20 s, which is what a group relying on raft's own heartbeats for
// failure detection pays for each step down in idle cost.
func deepConfig(logStore string) cluster.Config {
	c := quiescedConfig(logStore)
	c.HeartbeatTimeout = 10 * time.Second
	c.ElectionTimeout = 10 * time.Second
	c.LeaderLeaseTimeout = 8 * time.Second
	c.CommitTimeout = 5 * time.Second
	c.ClockSyncInterval = time.Minute
	c.TickInterval = 5 * time.Second
	c.WaiterLease = 45 * time.Second
	return c
}

// profiles are the idle phase's timing profiles, by name.
var profiles = map[string]func(logStore string) cluster.Config{
	"default":  baseConfig,
	"quiesced": quiescedConfig,
	"deep":     deepConfig,
}

// sample is what the process has used so far.
type sample struct {
	at         time.Time
	cpu        time.Duration // user + system
	writeBytes int64         // /proc/self/io write_bytes: bytes sent to the disk
	wchar      int64         // bytes passed to write(2) and friends
	entries    uint64        // sum over groups of the leader's last applied index
	logWrites  uint64        // sum over every node of raft log appends (each one fsync)
	ticks      uint64        // Ticks proposed
}

func takeSample(ctx context.Context, c *Cluster) sample {
	s := sample{at: time.Now(), cpu: cpuTime()}
	s.writeBytes, s.wchar = procIO()
	for _, nodes := range c.Groups {
		var max uint64
		for _, n := range nodes {
			if a := n.AppliedIndex(); a > max {
				max = a
			}
			lw, tk := nodeCounters(n)
			s.logWrites += lw
			s.ticks += tk
		}
		s.entries += max
	}
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func procIO() (writeBytes, wchar int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "write_bytes":
			writeBytes = n
		case "wchar":
			wchar = n
		}
	}
	return writeBytes, wchar
}

// nodeCounters reads a node's count of log appends
// (locknode_log_store_seconds) and of Ticks it proposed.
func nodeCounters(n *cluster.Node) (logWrites, ticks uint64) {
	mfs, err := n.Metrics().Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "locknode_log_store_seconds":
			for _, m := range mf.GetMetric() {
				logWrites += m.GetHistogram().GetSampleCount()
			}
		case "locknode_ticks_total":
			for _, m := range mf.GetMetric() {
				ticks += uint64(m.GetCounter().GetValue())
			}
		}
	}
	return logWrites, ticks
}

func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// record is one line of NAME.jsonl.
type record struct {
	Type     string             `json:"type"`
	Phase    string             `json:"phase,omitempty"`
	Config   string             `json:"config,omitempty"`
	Round    int                `json:"round,omitempty"`
	Metrics  map[string]float64 `json:"metrics,omitempty"`
	Meta     map[string]string  `json:"meta,omitempty"`
	Errors   int64              `json:"errors,omitempty"`
	Leaders  []string           `json:"leaders,omitempty"`
	Comments string             `json:"comment,omitempty"`
}

type report struct {
	mu   sync.Mutex
	recs []record
}

func (r *report) add(rec record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	b, _ := json.Marshal(rec)
	fmt.Println(string(b))
}

func run(ctx context.Context, o options) (err error) {
	dir := o.dir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else {
		if dir, err = os.MkdirTemp("", "multiraft-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	logger := hclog.NewNullLogger()
	if o.logLevel != "off" {
		logger = hclog.New(&hclog.LoggerOptions{Name: "multiraft", Level: hclog.LevelFromString(o.logLevel)})
	}
	rep := &report{}
	rep.add(record{Type: "meta", Meta: collectMeta(o)})
	probe, err := probeFsync(dir, []int{1, 3, 6, 12}, 2*time.Second)
	if err != nil {
		return err
	}
	rep.add(record{Type: "fsync", Metrics: probe})

	phases := strings.Split(o.phases, ",")
	for _, p := range phases {
		switch strings.TrimSpace(p) {
		case "idle":
			if err := idlePhase(ctx, o, dir, logger, rep); err != nil {
				return err
			}
		case "throughput":
			if err := throughputPhase(ctx, o, dir, logger, rep); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown phase %q (idle, throughput)", p)
		}
	}
	rep.add(record{Type: "end", Meta: map[string]string{"time": time.Now().UTC().Format(time.RFC3339), "loadavg": loadavg()}})
	return writeResults(o, rep)
}

func collectMeta(o options) map[string]string {
	m := map[string]string{
		"time":      time.Now().UTC().Format(time.RFC3339),
		"command":   "go run ./cmd/multiraft " + strings.Join(os.Args[1:], " "),
		"nproc":     strconv.Itoa(runtime.NumCPU()),
		"go":        runtime.Version(),
		"loadavg":   loadavg(),
		"log_store": o.logStore,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				m["cpu_model"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	return m
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

func idlePhase(ctx context.Context, o options, dir string, logger hclog.Logger, rep *report) error {
	for round := 1; round <= o.rounds; round++ {
		for _, prof := range o.profiles {
			for _, g := range o.idleGroups {
				if err := idleRun(ctx, o, filepath.Join(dir, fmt.Sprintf("idle-r%d-%s-g%d", round, prof, g)), g, prof, round, logger, rep); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func idleConfigName(groups int, profile string) string {
	return fmt.Sprintf("%d groups, %s", groups, profile)
}

func idleRun(ctx context.Context, o options, dir string, groups int, profile string, round int, logger hclog.Logger, rep *report) error {
	cfg := func(int) cluster.Config { return profiles[profile](o.logStore) }
	if err := checkFreeSpace(filepath.Dir(dir), groups*o.nodes); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := StartCluster(sctx, dir, o.nodes, groups, cfg, logger)
	if err != nil {
		return err
	}
	started := time.Since(start)
	defer func() {
		_ = c.Close()
		_ = os.RemoveAll(dir)
	}()
	if err := sleep(ctx, o.settle); err != nil {
		return err
	}
	a := takeSample(ctx, c)
	if err := sleep(ctx, o.window); err != nil {
		return err
	}
	b := takeSample(ctx, c)
	secs := b.at.Sub(a.at).Seconds()
	n := float64(o.nodes)
	// The heap left by the previous configuration is returned first, so
	// the resident size is this configuration's.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.add(record{Type: "run", Phase: "idle", Config: idleConfigName(groups, profile), Round: round, Metrics: map[string]float64{
		"groups":                     float64(groups),
		"cpu_cores_per_node":         (b.cpu - a.cpu).Seconds() / secs / n,
		"entries_per_s_per_node":     float64(b.entries-a.entries) / secs, // every node stores every entry of its groups
		"log_writes_per_s_per_node":  float64(b.logWrites-a.logWrites) / secs / n,
		"disk_bytes_per_s_per_node":  float64(b.writeBytes-a.writeBytes) / secs / n,
		"write_bytes_per_s_per_node": float64(b.wchar-a.wchar) / secs / n,
		"ticks_per_s":                float64(b.ticks-a.ticks) / secs,
		"rss_mib_process":            float64(rssKiB()) / 1024,
		"heap_inuse_mib_process":     float64(ms.HeapInuse) / (1 << 20),
		"goroutines_process":         float64(runtime.NumGoroutine()),
		"start_s":                    started.Seconds(),
		"loadavg_1m":                 loadavg1(),
	}})
	return nil
}

func loadavg1() float64 {
	f := strings.Fields(loadavg())
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func throughputPhase(ctx context.Context, o options, dir string, logger hclog.Logger, rep *report) error {
	max := 0
	for _, g := range o.tpGroups {
		if g > max {
			max = g
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	d := filepath.Join(dir, "throughput")
	c, err := StartCluster(sctx, d, o.nodes, max, func(int) cluster.Config { return baseConfig(o.logStore) }, logger)
	if err != nil {
		return err
	}
	defer func() {
		_ = c.Close()
		_ = os.RemoveAll(d)
	}()
	if o.spread {
		if err := c.SpreadLeaders(sctx); err != nil {
			return err
		}
	}
	for round := 1; round <= o.rounds; round++ {
		for _, w := range o.workers {
			for _, g := range o.tpGroups {
				if err := throughputRun(ctx, o, c, g, w, round, rep); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func tpConfigName(groups, workers int) string {
	return fmt.Sprintf("%d groups, %d workers", groups, workers)
}

// throughputRun runs workers workers, worker w cycling lock "w<w>"
// (acquire, release) on group w mod groups, through that group's leader,
// for o.warmup and then o.duration, counting the cycles that ended in
// the measured window.
func throughputRun(ctx context.Context, o options, c *Cluster, groups, workers, round int, rep *report) error {
	leaders := make([]*cluster.Node, groups)
	var where []string
	for g := range leaders {
		l, err := c.Leader(ctx, g)
		if err != nil {
			return err
		}
		leaders[g] = l
		where = append(where, fmt.Sprintf("g%d:%s", g, l.ID()))
	}
	var measuring atomic.Bool
	var cycles, errs atomic.Int64
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		// Ends when wctx is cancelled (end of the window) after finishing
		// its cycle.
		go func() {
			defer wg.Done()
			g := w % groups
			key := fmt.Sprintf("w%d", w)
			owner := fmt.Sprintf("owner-%d-%d", round, w)
			for wctx.Err() == nil {
				l := leaders[g]
				if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: 10000}); err != nil {
					errs.Add(1)
					if nl, err := c.Leader(ctx, g); err == nil {
						leaders[g] = nl
					}
					continue
				}
				if _, err := l.Release(ctx, api.ReleaseRequest{Key: key, Owner: owner}); err != nil {
					errs.Add(1)
					continue
				}
				if measuring.Load() {
					cycles.Add(1)
				}
			}
		}()
	}
	if err := sleep(ctx, o.warmup); err != nil {
		return err
	}
	a := takeSample(ctx, c)
	measuring.Store(true)
	err := sleep(ctx, o.duration)
	measuring.Store(false)
	b := takeSample(ctx, c)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	secs := b.at.Sub(a.at).Seconds()
	cyc := float64(cycles.Load())
	entries := float64(b.entries - a.entries)
	rep.add(record{Type: "run", Phase: "throughput", Config: tpConfigName(groups, workers), Round: round, Errors: errs.Load(), Leaders: where, Metrics: map[string]float64{
		"groups":                float64(groups),
		"workers":               float64(workers),
		"cycles_per_s":          cyc / secs,
		"entries_per_s":         entries / secs,
		"entries_per_log_write": entries * float64(o.nodes) / max1(float64(b.logWrites-a.logWrites)),
		"cpu_cores_process":     (b.cpu - a.cpu).Seconds() / secs,
		"cpu_us_per_cycle":      (b.cpu - a.cpu).Seconds() * 1e6 / max1(cyc),
		"log_writes_per_s_all":  float64(b.logWrites-a.logWrites) / secs,
		"loadavg_1m":            loadavg1(),
	}})
	return nil
}

func max1(v float64) float64 {
	if v < 1 {
		return 1
	}
	return v
}

// median of the metric over the runs of config in phase.
func median(recs []record, phase, config, metric string) (float64, int) {
	var v []float64
	for _, r := range recs {
		if r.Type == "run" && r.Phase == phase && r.Config == config {
			v = append(v, r.Metrics[metric])
		}
	}
	if len(v) == 0 {
		return 0, 0
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], len(v)
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, len(v)
}
