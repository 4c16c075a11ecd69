package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// meta describes the machine, versions and command of a run, so that any
// two result files can be compared.
type meta struct {
	Type     string `json:"type"` // "meta"
	Time     string `json:"time"`
	Command  string `json:"command"`
	Dir      string `json:"dir"`
	Nproc    int    `json:"nproc"`
	CPU      string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	MemTotal string `json:"mem_total"`
	LoadAvg  string `json:"loadavg_at_start"` // other work on the machine skews results
	LoadEnd  string `json:"loadavg_at_end"`
	// Fsync is the latency of a 4 KiB append + fdatasync in the temp
	// directory: the floor under every durable backend's commit.
	Fsync    map[string]float64 `json:"fdatasync_4k_ms"`
	Versions map[string]string  `json:"versions"`
	Settings map[string]string  `json:"settings"`
	Servers  map[string]string  `json:"server_commands"`
}

func collectMeta(repo string) meta {
	m := meta{Type: "meta", Time: time.Now().UTC().Format(time.RFC3339), Nproc: runtime.NumCPU(), Servers: map[string]string{}}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadAvg = loadavg()
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		l, _, _ := strings.Cut(string(b), "\n")
		m.MemTotal = strings.Join(strings.Fields(l)[1:], " ")
	}
	return m
}

// probeFsync times n appends of 4 KiB, each followed by fdatasync, in
// dir: alone, and with three writers at once on separate files, as the
// three nodes of a cluster on one disk write their logs (the "3way"
// figures, the floor under a 3-node commit on this machine).
func probeFsync(dir string, n int) map[string]float64 {
	one, err := fsyncWriters(dir, n, 1)
	if err != nil {
		return nil
	}
	three, err := fsyncWriters(dir, n, 3)
	if err != nil {
		return nil
	}
	return map[string]float64{"p50": ms(pct(one, 50)), "p99": ms(pct(one, 99)), "samples": float64(n),
		"p50_3way": ms(pct(three, 50)), "p99_3way": ms(pct(three, 99))}
}

// fsyncWriters runs w writers of n synced 4 KiB appends each and returns
// every append's latency, sorted.
func fsyncWriters(dir string, n, w int) ([]time.Duration, error) {
	lat := make([][]time.Duration, w)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for i := range w {
		wg.Add(1)
		// Ends after n appends or the first error.
		go func() {
			defer wg.Done()
			lat[i], errs[i] = fsyncAppends(dir, n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all, nil
}

func fsyncAppends(dir string, n int) ([]time.Duration, error) {
	fh, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(fh.Name())
	defer fh.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := fh.Write(buf); err != nil {
			return nil, err
		}
		if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// loadavg1 is the 1-minute load average (2 means both cores busy).
func loadavg1() float64 {
	f := strings.Fields(loadavg())
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// shellJoin quotes argv for a shell, so recorded commands can be re-run.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t'\"$&;|<>*?()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func cmdOut(dir string, argv ...string) string {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

func versions(redisBin, etcdBin, repo string) map[string]string {
	v := map[string]string{
		"go (harness)":  runtime.Version(),
		"go toolchain":  cmdOut(repo, "go", "version"),
		"locknode":      cmdOut(repo, "git", "rev-parse", "HEAD"),
		"locknode tree": cmdOut(repo, "git", "describe", "--always", "--dirty", "--abbrev=12"),
	}
	if redisBin != "" {
		v["redis"] = cmdOut(".", redisBin, "--version")
	}
	if etcdBin != "" {
		v["etcd"] = cmdOut(".", etcdBin, "--version")
	}
	v["etcd client"] = "go.etcd.io/etcd/client/v3 v3.5.17"
	v["go-redis"] = "github.com/redis/go-redis/v9 v9.23.0"
	v["redsync"] = "github.com/go-redsync/redsync/v4 v4.18.1"
	return v
}

type report struct {
	opts     *options
	start    time.Time
	elapsed  time.Duration
	meta     meta
	backends []string
	runs     []result
	skipped  []string
	failures []string
}

func (r *report) add(x result) { r.runs = append(r.runs, x) }

func (r *report) commands(name string, cmds []string) {
	if len(cmds) > 0 {
		r.meta.Servers[name] = strings.Join(cmds, " ; ")
	}
}

// summary is the median over runs of one (backend, workload).
type summary struct {
	Type     string             `json:"type"` // "median"
	Backend  string             `json:"backend"`
	Workload string             `json:"workload"`
	Runs     int                `json:"runs"`
	Metrics  map[string]float64 `json:"metrics"`
	Errors   int64              `json:"errors"`
}

func (r *report) medians() map[[2]string]*summary {
	all := map[[2]string]map[string][]float64{}
	out := map[[2]string]*summary{}
	for _, x := range r.runs {
		k := [2]string{x.Backend, x.Workload}
		if all[k] == nil {
			all[k] = map[string][]float64{}
			out[k] = &summary{Type: "median", Backend: x.Backend, Workload: x.Workload, Metrics: map[string]float64{}}
		}
		out[k].Runs++
		out[k].Errors += x.Errors
		for m, v := range x.Metrics {
			all[k][m] = append(all[k][m], v)
		}
	}
	for k, ms := range all {
		for m, vs := range ms {
			out[k].Metrics[m] = median(vs)
		}
	}
	// Failover (one per client placement): the p50 over runs, the worst
	// run, and how many runs met 1.5 s.
	for k, s := range out {
		if k[1] != "failover" {
			continue
		}
		ok := 0.0
		for _, v := range all[k]["all_granted_ms"] {
			if v <= 1500 {
				ok++
			}
			s.Metrics["all_granted_ms_max"] = max(s.Metrics["all_granted_ms_max"], v)
		}
		s.Metrics["runs_all_granted_within_1500ms"] = ok
	}
	return out
}

// lnBackends are the locknode backends of the run, in the order given.
func (r *report) lnBackends() []string {
	var out []string
	for _, b := range r.backends {
		if strings.HasPrefix(b, "locknode-") {
			out = append(out, b)
		}
	}
	return out
}

// placement is where a locknode backend's clients send: its @ suffix,
// else -targets.
func (r *report) placement(backend string) string {
	if _, t, ok := strings.Cut(backendCore(backend), "@"); ok {
		return t
	}
	return r.opts.settings.lnTargets
}

// failoverBackends are the failover workload's labels, in run order.
func (r *report) failoverBackends() []string {
	var out []string
	for _, x := range r.runs {
		if x.Workload == "failover" && !contains(out, x.Backend) {
			out = append(out, x.Backend)
		}
	}
	return out
}

// target is one goal of the issue, evaluated on the medians.
type target struct {
	Type     string  `json:"type"` // "target"
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Value    float64 `json:"value"`
	Measured string  `json:"measured"`
	Met      *bool   `json:"met"` // nil: not measured in this run
}

func (r *report) targets(med map[[2]string]*summary) []target {
	get := func(b, w, m string) (float64, bool) {
		s := med[[2]string{b, w}]
		if s == nil {
			return 0, false
		}
		v, ok := s.Metrics[m]
		return v, ok
	}
	var ts []target
	add := func(name, goal string, v float64, measured string, have bool, met bool) {
		t := target{Type: "target", Name: name, Goal: goal, Value: v, Measured: measured}
		if have {
			t.Met = &met
		}
		ts = append(ts, t)
	}
	for _, ln := range r.lnBackends() {
		c64 := fmt.Sprintf("uncontended-c%d", 64)
		lv, lok := get(ln, c64, "cycles_per_s")
		ev, eok := get("etcd-3node", c64, "cycles_per_s")
		add(ln+" uncontended 64 vs etcd 3-node", "≥ 4×", safeDiv(lv, ev), fmt.Sprintf("%.0f / %.0f cycles/s = %.2f×", lv, ev, safeDiv(lv, ev)), lok && eok, safeDiv(lv, ev) >= 4)
		rv, rok := get("redlock-3-redis", c64, "cycles_per_s")
		add(ln+" uncontended 64 vs Redlock (3 redis)", "≥ 1.05×", safeDiv(lv, rv), fmt.Sprintf("%.0f / %.0f cycles/s = %.2f×", lv, rv, safeDiv(lv, rv)), lok && rok, safeDiv(lv, rv) >= 1.05)
		p50, ok := get(ln, "uncontended-c1", "acquire_p50_ms")
		add(ln+" 1 worker acquire p50", "≤ 0.45 ms", p50, fmt.Sprintf("%.3f ms", p50), ok, p50 <= 0.45)
		cw := fmt.Sprintf("contended-c%d", r.opts.contended)
		la, lok2 := get(ln, cw, "acquisitions_per_s")
		ea, eok2 := get("etcd-3node", cw, "acquisitions_per_s")
		add(ln+" contended vs etcd 3-node", "≥ 15×", safeDiv(la, ea), fmt.Sprintf("%.0f / %.0f acq/s = %.2f×", la, ea, safeDiv(la, ea)), lok2 && eok2, safeDiv(la, ea) >= 15)
		p99, ok := get(ln, cw, "wait_p99_ms")
		add(ln+" contended wait p99", "≤ 10 ms", p99, fmt.Sprintf("%.2f ms", p99), ok, p99 <= 10)
		rpa, ok := get(ln, cw, "requests_per_acquisition")
		add(ln+" contended requests per acquisition", "= 2.0", rpa, fmt.Sprintf("%.4f", rpa), ok, math.Abs(rpa-2) < 0.0005)
		fr, ok := get(ln, cw, "fair_max_over_min")
		add(ln+" contended fairness max/min", "≤ 1.1", fr, fmt.Sprintf("%.3f", fr), ok, fr <= 1.1)
		if strings.HasPrefix(ln, "locknode-resp") {
			s, ok1 := get(ln, fmt.Sprintf("scripts-setnx-c%d", r.opts.scriptWorkers), "cycles_per_s")
			h, ok2 := get(ln, fmt.Sprintf("scripts-hash-script-c%d", r.opts.scriptWorkers), "cycles_per_s")
			add(ln+" scripted (hash lock) vs SET NX", "≥ 0.5×", safeDiv(h, s), fmt.Sprintf("%.0f / %.0f cycles/s = %.2f×", h, s, safeDiv(h, s)), ok1 && ok2, safeDiv(h, s) >= 0.5)
		}
	}
	// A follower against the leader, same protocol, same run.
	for _, proto := range []string{"locknode-resp", "locknode-http"} {
		lb, fb := proto+"@leader", proto+"@follower"
		ratio := func(name, goal, w, m string, want float64, atMost bool) {
			lv, lok := get(lb, w, m)
			fv, fok := get(fb, w, m)
			q := safeDiv(fv, lv)
			met := q >= want
			if atMost {
				met = q <= want && q > 0
			}
			add(proto+" follower vs leader: "+name, goal, q, fmt.Sprintf("%.3f / %.3f = %.2f×", fv, lv, q), lok && fok, met)
		}
		ratio("1 worker acquire p50", "≤ 1.2×", "uncontended-c1", "acquire_p50_ms", 1.2, true)
		ratio("uncontended 64 cycles/s", "≥ 0.9×", "uncontended-c64", "cycles_per_s", 0.9, false)
		ratio("contended acquisitions/s", "≥ 0.9×", fmt.Sprintf("contended-c%d", r.opts.contended), "acquisitions_per_s", 0.9, false)
		if proto == "locknode-resp" {
			ratio("pipelined SET NX/s", "≥ 0.8×", fmt.Sprintf("pipeline-d%d", pipelineDepth), "ops_per_s", 0.8, false)
		}
	}
	fbs := r.failoverBackends()
	if len(fbs) == 0 {
		fbs = []string{"locknode-http"} // listed as not measured
	}
	for _, fb := range fbs {
		ng, ok := get(fb, "failover", "next_grant_ms")
		add(fb+" failover next grant p50", "≤ 1 s", ng, fmt.Sprintf("%.0f ms", ng), ok, ng <= 1000)
		n, ok2 := get(fb, "failover", "runs_all_granted_within_1500ms")
		runs := 0
		if s := med[[2]string{fb, "failover"}]; s != nil {
			runs = s.Runs
		}
		ag, _ := get(fb, "failover", "all_granted_ms")
		add(fb+" failover every worker granted again ≤ 1.5 s", "5 of 5 runs", n, fmt.Sprintf("%d of %d runs (median %.0f ms)", int(n), runs, ag), ok2, int(n) == runs && runs >= 5)
	}
	sw := fmt.Sprintf("scale-%d", r.opts.scaleLocks)
	rss, ok := get("locknode", sw, "rss_mb_max")
	add(fmt.Sprintf("%d held locks: RSS per node", r.opts.scaleLocks), "≤ 300 MB", rss, fmt.Sprintf("%.0f MB (max of 3 nodes)", rss), ok, rss <= 300)
	rs, ok := get("locknode", sw, "restart_to_serving_s")
	add(fmt.Sprintf("%d held locks: restart to serving", r.opts.scaleLocks), "≤ 3 s", rs, fmt.Sprintf("%.2f s", rs), ok, rs <= 3)
	return ts
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *report) write(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.meta.LoadEnd = loadavg()
	med := r.medians()
	ts := r.targets(med)
	r.meta.Settings = map[string]string{
		"runs": fmt.Sprint(r.opts.runs), "duration": r.opts.duration.String(), "warmup": r.opts.warmup.String(),
		"concurrency": r.opts.concurrency, "contended_workers": fmt.Sprint(r.opts.contended),
		"script_workers": fmt.Sprint(r.opts.scriptWorkers), "ttl": r.opts.settings.ttl.String(),
		"poll": r.opts.pollMin.String() + ".." + r.opts.pollM.String(), "targets": r.opts.settings.lnTargets,
		"failover_runs": fmt.Sprint(r.opts.failoverRuns), "failover_workers": fmt.Sprint(r.opts.failoverWork),
		"scale_locks": fmt.Sprint(r.opts.scaleLocks), "scale_targets": r.opts.scaleTargets,
		"hold_locks": fmt.Sprint(r.opts.hold.locks), "hold_ttl": r.opts.hold.ttl.String(), "hold_duration": r.opts.hold.window.String(), "elapsed": r.elapsed.Round(time.Second).String(),
	}
	// JSON lines.
	var jl strings.Builder
	enc := json.NewEncoder(&jl)
	if err := enc.Encode(r.meta); err != nil {
		return err
	}
	for _, x := range r.runs {
		if err := enc.Encode(sanitize(x)); err != nil {
			return err
		}
	}
	keys := sortedKeys(med)
	for _, k := range keys {
		s := *med[k]
		s.Metrics = sanitizeMap(s.Metrics)
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	for _, t := range ts {
		if math.IsInf(t.Value, 0) || math.IsNaN(t.Value) {
			t.Value = -1
		}
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	for _, f := range r.failures {
		_ = enc.Encode(map[string]string{"type": "failure", "error": f})
	}
	for _, f := range r.skipped {
		_ = enc.Encode(map[string]string{"type": "skipped", "reason": f})
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(jl.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(r.markdown(med, ts, name)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".svg"), []byte(r.svg(med)), 0o644)
}

func sanitize(x result) result {
	x.Metrics = sanitizeMap(x.Metrics)
	return x
}

// sanitizeMap replaces values JSON cannot hold (a worker with no
// acquisition gives an infinite max/min) with -1.
func sanitizeMap(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			v = -1
		}
		out[k] = v
	}
	return out
}

func sortedKeys(m map[[2]string]*summary) [][2]string {
	var ks [][2]string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i][1] != ks[j][1] {
			return ks[i][1] < ks[j][1]
		}
		return ks[i][0] < ks[j][0]
	})
	return ks
}

func f(v float64, prec int) string {
	if math.IsInf(v, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func (r *report) markdown(med map[[2]string]*summary, ts []target, name string) string {
	var b strings.Builder
	m := r.meta
	fmt.Fprintf(&b, "# lockbench results (%s)\n\n", name)
	fmt.Fprintf(&b, "- when: %s, took %s\n- command: `%s` (in `%s`)\n", m.Time, r.elapsed.Round(time.Second), m.Command, m.Dir)
	fmt.Fprintf(&b, "- machine: %d cores, %s, kernel %s, %s RAM; load average at start %s, at end %s\n", m.Nproc, m.CPU, m.Kernel, m.MemTotal, m.LoadAvg, m.LoadEnd)
	if m.Fsync != nil {
		fmt.Fprintf(&b, "- disk: 4 KiB append + fdatasync in the temp dir: p50 %.3f ms, p99 %.3f ms alone; p50 %.3f ms, p99 %.3f ms with 3 writers at once, as 3 nodes (%v samples per writer, at start)\n",
			m.Fsync["p50"], m.Fsync["p99"], m.Fsync["p50_3way"], m.Fsync["p99_3way"], m.Fsync["samples"])
	}
	vk := make([]string, 0, len(m.Versions))
	for k := range m.Versions {
		vk = append(vk, k)
	}
	slices.Sort(vk)
	for _, k := range vk {
		fmt.Fprintf(&b, "- %s: %s\n", k, m.Versions[k])
	}
	fmt.Fprintf(&b, "- settings: %d run(s) per backend, alternating, median reported; window %s after %s warm-up; lease %s; polling clients retry after %s..%s; clients send to: %s\n",
		r.opts.runs, r.opts.duration, r.opts.warmup, r.opts.settings.ttl, r.opts.pollMin, r.opts.pollM, r.opts.settings.lnTargets)
	for _, s := range r.skipped {
		fmt.Fprintf(&b, "- **skipped**: %s\n", s)
	}
	for _, s := range r.failures {
		fmt.Fprintf(&b, "- **failure**: %s\n", s)
	}
	b.WriteString("\n![chart](" + name + ".svg)\n\n")

	r.cpuTable(&b, med)
	r.headline(&b, med)
	b.WriteString("## Targets\n\n| target | goal | measured | met |\n|---|---|---|---|\n")
	for _, t := range ts {
		met, measured := "not measured", "—"
		if t.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*t.Met]
			measured = t.Measured
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Goal, measured, met)
	}

	cs := strings.Split(r.opts.concurrency, ",")
	b.WriteString("\n## Uncontended (each worker its own lock, acquire → release)\n\n")
	b.WriteString("| backend | workers | cycles/s | acquire p50 ms | acquire p99 ms | release p50 ms | release p99 ms | requests/cycle | errors | load avg |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, be := range r.backends {
		for _, c := range cs {
			s := med[[2]string{be, "uncontended-c" + strings.TrimSpace(c)}]
			if s == nil {
				continue
			}
			x := s.Metrics
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", be, c, f(x["cycles_per_s"], 0), f(x["acquire_p50_ms"], 3), f(x["acquire_p99_ms"], 3),
				f(x["release_p50_ms"], 3), f(x["release_p99_ms"], 3), f(x["requests_per_cycle"], 2), s.Errors, f(x["loadavg_1m"], 1))
		}
	}
	r.pathTable(&b, med)
	r.holdingTable(&b, med)
	fmt.Fprintf(&b, "\n## Contended (%d workers, one lock, hold 0)\n\n", r.opts.contended)
	b.WriteString("| backend | acquisitions/s | wait p50 ms | wait p99 ms | wait max ms | requests/acquisition | min..max per worker | max/min | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, be := range r.backends {
		s := med[[2]string{be, fmt.Sprintf("contended-c%d", r.opts.contended)}]
		if s == nil {
			continue
		}
		x := s.Metrics
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s..%s | %s | %d |\n", be, f(x["acquisitions_per_s"], 0), f(x["wait_p50_ms"], 2), f(x["wait_p99_ms"], 2), f(x["wait_max_ms"], 2),
			f(x["requests_per_acquisition"], 3), f(x["fair_min"], 0), f(x["fair_max"], 0), f(x["fair_max_over_min"], 3), s.Errors)
	}
	fmt.Fprintf(&b, "\n## Scripts (%d workers: Redisson-shape reentrant hash lock vs SET NX + compare-and-delete)\n\n", r.opts.scriptWorkers)
	b.WriteString("| backend | SET NX cycles/s | hash-script cycles/s | ratio | SET NX acquire p50 ms | script acquire p50 ms | errors |\n|---|---|---|---|---|---|---|\n")
	for _, be := range r.backends {
		s1 := med[[2]string{be, fmt.Sprintf("scripts-setnx-c%d", r.opts.scriptWorkers)}]
		s2 := med[[2]string{be, fmt.Sprintf("scripts-hash-script-c%d", r.opts.scriptWorkers)}]
		if s1 == nil || s2 == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d |\n", be, f(s1.Metrics["cycles_per_s"], 0), f(s2.Metrics["cycles_per_s"], 0),
			f(safeDiv(s2.Metrics["cycles_per_s"], s1.Metrics["cycles_per_s"]), 2), f(s1.Metrics["acquire_p50_ms"], 3), f(s2.Metrics["acquire_p50_ms"], 3), s1.Errors+s2.Errors)
	}
	var fo []result
	for _, x := range r.runs {
		if x.Workload == "failover" {
			fo = append(fo, x)
		}
	}
	if len(fo) > 0 {
		fmt.Fprintf(&b, "\n## Failover (kill -9 of the leader under load: %d workers cycling their own locks)\n\n", r.opts.failoverWork)
		b.WriteString("Clients spread: one client per node, each listing every node starting at its own. Clients on the leader: the client starts at the leader (the node killed) and fails over. " +
			"Clients on followers: the clients list only the two followers, which stay up; one of them becomes the leader. " +
			"RESP (go-redis, SET NX PX + compare-and-delete): clients on the two followers only. After an error a worker waits 5 ms before its next acquire. The cases alternate run by run on one cluster.\n\n")
		b.WriteString("| backend | clients on | run | killed | next grant ms | every worker granted again ms | errors seen by workers |\n|---|---|---|---|---|---|---|\n")
		for _, be := range r.failoverBackends() {
			for _, x := range fo {
				if x.Backend == be {
					fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %d |\n", be, r.placement(be), x.Run, strings.TrimPrefix(x.Note, "killed leader "),
						f(x.Metrics["next_grant_ms"], 0), f(x.Metrics["all_granted_ms"], 0), x.Errors)
				}
			}
			if s := med[[2]string{be, "failover"}]; s != nil {
				fmt.Fprintf(&b, "| %s | %s | median | | %s | %s | |\n", be, r.placement(be), f(s.Metrics["next_grant_ms"], 0), f(s.Metrics["all_granted_ms"], 0))
			}
		}
	}
	sw := fmt.Sprintf("scale-%d", r.opts.scaleLocks)
	for _, be := range []string{"locknode", "redis"} {
		s := med[[2]string{be, sw}]
		if s == nil {
			continue
		}
		x := s.Metrics
		if be == "locknode" {
			how := "one EVAL of 100 × SET NX PX 1h per log entry, 128 connections"
			if r.opts.scaleFill == "set" {
				how = "one pipelined SET NX PX 1h per lock, 128 connections"
			}
			fmt.Fprintf(&b, "\n## Scale: %d held locks (%s, clients on %s), 3-node locknode\n\n", r.opts.scaleLocks, how, r.opts.scaleTargets)
			b.WriteString("| node | RSS after fill MB | RSS after snapshot MB | peak RSS before restart MB | snapshot MB | snapshot index | wal MB (files) | wal on disk MB | raft.db MB | RSS after restart MB |\n|---|---|---|---|---|---|---|---|---|---|\n")
			for _, id := range []string{"n1", "n2", "n3"} {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s |\n", id, f(x["rss_mb_after_fill_"+id], 0), f(x["rss_mb_"+id], 0), f(x["rss_peak_mb_"+id], 0),
					f(x["snapshot_mb_"+id], 1), f(x["snapshot_index_"+id], 0), f(x["wal_mb_"+id], 0), f(x["wal_files_"+id], 0), f(x["wal_disk_mb_"+id], 0),
					f(x["raftdb_mb_"+id], 1), f(x["rss_mb_after_restart_"+id], 0))
			}
			b.WriteString("\nRSS after snapshot is the resident set when every node has a snapshot of every lock; peak is VmHWM at that moment (the largest resident set so far, fill and snapshot included). " +
				"The raft log is DataDir/wal (raft-wal: 64 MiB preallocated segment files plus wal-meta.db; \"wal MB\" is the files' size, \"on disk\" the blocks allocated, written or preallocated); raft.db is only the stable store (term, vote).\n")
			fmt.Fprintf(&b, "\nfill %s locks/s (batches sent again after a leader loss: %s); locks after fill %s, after restart %s; restart of all 3 nodes (after kill -9) to serving: **%s s**\n",
				f(x["fill_locks_per_s"], 0), f(x["batches_retried_no_leader"], 0), f(x["locks_after_fill"], 0), f(x["locks_after_restart"], 0), f(x["restart_to_serving_s"], 2))
			for _, y := range r.runs {
				if y.Backend == be && y.Workload == sw && y.Note != "" {
					fmt.Fprintf(&b, "\nnote: %s\n", y.Note)
				}
			}
		} else {
			fmt.Fprintf(&b, "\nredis reference (1 process, no AOF, RDB saved then kill -9): RSS %s MB, dump.rdb %s MB, fill %s locks/s, restart to serving %s s\n",
				f(x["rss_mb_max"], 0), f(x["snapshot_mb"], 1), f(x["fill_locks_per_s"], 0), f(x["restart_to_serving_s"], 2))
		}
	}
	b.WriteString("\n## Server commands\n\n")
	sk := make([]string, 0, len(m.Servers))
	for k := range m.Servers {
		sk = append(sk, k)
	}
	slices.Sort(sk)
	for _, k := range sk {
		fmt.Fprintf(&b, "- %s: `%s`\n", k, m.Servers[k])
	}
	return b.String()
}

// pathTable shows, per locknode backend and phase, what the nodes'
// counters said: a follower's forwarding calls and the commands each
// carried, and the leader's log writes (each one fsync) and the commands
// each carried. Fewer commands per write at the same write time is less
// throughput.
func (r *report) pathTable(b *strings.Builder, med map[[2]string]*summary) {
	var rows []string
	for _, be := range r.lnBackends() {
		for _, k := range sortedKeys(med) {
			s := med[k]
			if k[0] != be {
				continue
			}
			x := s.Metrics
			if _, ok := x["leader_log_writes_per_s"]; !ok {
				continue
			}
			cpu := func(k string, prec int) string {
				if v, ok := x[k]; ok {
					return f(v, prec)
				}
				return "—"
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", be, r.placement(be), k[1], f(x["fwd_calls_per_s"], 0), f(x["fwd_cmds_per_call"], 2),
				f(x["leader_log_writes_per_s"], 0), f(x["leader_cmds_per_log_write"], 2), f(x["leader_log_write_mean_ms"], 2),
				cpu("nodes_cpu_cores", 2), cpu("nodes_cpu_us_per_op", 0)))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Where the commands go (node counters over each phase, warm-up included; medians)\n\n")
	b.WriteString("Forwarding: the followers' calls to the leader (`locknode_forward_calls_total`) and the commands they carried (`locknode_forwarded_total`). " +
		"Leader: its raft log writes, one fsync each (`locknode_log_store_seconds`), and the commands it proposed (`locknode_proposals_total`) per write. " +
		"CPU: the three node processes' CPU over the phase (`process_cpu_seconds_total`), in cores and per operation (cycle, acquisition or pipelined command); " +
		"where the nodes and the clients share the machine's cores, more CPU per operation means fewer operations.\n\n")
	b.WriteString("| backend | clients on | phase | forwarding calls/s | commands per call | leader log writes/s | commands per write | ms per write | nodes' CPU, cores | nodes' CPU per operation, µs |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row)
	}
}

// headline is one row per locknode backend (where its clients connect)
// with every wave-1 figure and its ratio to the peers of the same run,
// then the peers for reference.
func (r *report) headline(b *strings.Builder, med map[[2]string]*summary) {
	lns := r.lnBackends()
	if len(lns) == 0 {
		return
	}
	get := func(be, w, m string) (float64, bool) {
		if s := med[[2]string{be, w}]; s != nil {
			v, ok := s.Metrics[m]
			return v, ok
		}
		return 0, false
	}
	cell := func(v float64, ok bool, prec int) string {
		if !ok {
			return "—"
		}
		return f(v, prec)
	}
	ratio := func(a, c float64, aok, cok bool) string {
		if !aok || !cok || c == 0 {
			return "—"
		}
		return f(a/c, 2) + "×"
	}
	cw := fmt.Sprintf("contended-c%d", r.opts.contended)
	pw := fmt.Sprintf("pipeline-d%d", pipelineDepth)
	ev64, e64ok := get("etcd-3node", "uncontended-c64", "cycles_per_s")
	rv64, r64ok := get("redlock-3-redis", "uncontended-c64", "cycles_per_s")
	evc, ecok := get("etcd-3node", cw, "acquisitions_per_s")
	fmt.Fprintf(b, "## Headline: where the clients connect (%s is what a load balancer gives)\n\n", r.opts.settings.lnTargets)
	fmt.Fprintf(b, "Medians of %d run(s); ratios against etcd 3-node and Redlock (3 redis) of the same run. Failover over RESP is measured with clients on the followers only: a go-redis client has one address, and on the killed node it would wait for the restart.\n\n", r.opts.runs)
	b.WriteString("| backend | clients on | 1 worker acquire p50 ms | 64 workers cycles/s | × etcd 3-node | × Redlock | contended acq/s | × etcd 3-node | wait p99 ms | req/acq | pipelined SET NX/s | hash script ÷ SET NX | failover next grant p50 ms | failover all granted: worst ms (runs ≤ 1.5 s) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, be := range lns {
		p50, p50ok := get(be, "uncontended-c1", "acquire_p50_ms")
		c64, c64ok := get(be, "uncontended-c64", "cycles_per_s")
		ca, caok := get(be, cw, "acquisitions_per_s")
		p99, p99ok := get(be, cw, "wait_p99_ms")
		rpa, rpaok := get(be, cw, "requests_per_acquisition")
		pl, plok := get(be, pw, "ops_per_s")
		ss, ssok := get(be, fmt.Sprintf("scripts-setnx-c%d", r.opts.scriptWorkers), "cycles_per_s")
		hs, hsok := get(be, fmt.Sprintf("scripts-hash-script-c%d", r.opts.scriptWorkers), "cycles_per_s")
		fo := be
		ng, ngok := get(fo, "failover", "next_grant_ms")
		agw, agok := get(fo, "failover", "all_granted_ms_max")
		nok, _ := get(fo, "failover", "runs_all_granted_within_1500ms")
		runs := 0
		if s := med[[2]string{fo, "failover"}]; s != nil {
			runs = s.Runs
		}
		all := "—"
		if agok {
			all = fmt.Sprintf("%s (%d of %d)", f(agw, 0), int(nok), runs)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", be, r.placement(be),
			cell(p50, p50ok, 3), cell(c64, c64ok, 0), ratio(c64, ev64, c64ok, e64ok), ratio(c64, rv64, c64ok, r64ok),
			cell(ca, caok, 0), ratio(ca, evc, caok, ecok), cell(p99, p99ok, 2), cell(rpa, rpaok, 3), cell(pl, plok, 0),
			ratio(hs, ss, hsok, ssok), cell(ng, ngok, 0), all)
	}
	for _, be := range []string{"etcd-3node", "redlock-3-redis"} {
		if !contains(r.backends, be) {
			continue
		}
		p50, p50ok := get(be, "uncontended-c1", "acquire_p50_ms")
		c64, c64ok := get(be, "uncontended-c64", "cycles_per_s")
		ca, caok := get(be, cw, "acquisitions_per_s")
		p99, p99ok := get(be, cw, "wait_p99_ms")
		rpa, rpaok := get(be, cw, "requests_per_acquisition")
		on := "every node"
		if be == "etcd-3node" && r.opts.settings.lnTargets != "spread" {
			on = "leader"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | | | %s | | %s | %s | | | | |\n", be, on, cell(p50, p50ok, 3), cell(c64, c64ok, 0),
			cell(ca, caok, 0), cell(p99, p99ok, 2), cell(rpa, rpaok, 3))
	}
	b.WriteString("\n")
}

// svg draws one panel of horizontal bars per headline metric, one bar per
// backend.
func (r *report) svg(med map[[2]string]*summary) string {
	type panel struct {
		title, workload, metric, unit string
		prec                          int
	}
	panels := []panel{
		{"uncontended, 64 workers: cycles/s (higher is better)", "uncontended-c64", "cycles_per_s", "", 0},
		{"uncontended, 1 worker: acquire p50 ms (lower is better)", "uncontended-c1", "acquire_p50_ms", " ms", 3},
		{fmt.Sprintf("contended, %d workers, one lock: acquisitions/s (higher is better)", r.opts.contended), fmt.Sprintf("contended-c%d", r.opts.contended), "acquisitions_per_s", "", 0},
		{fmt.Sprintf("contended, %d workers: wait p99 ms (lower is better)", r.opts.contended), fmt.Sprintf("contended-c%d", r.opts.contended), "wait_p99_ms", " ms", 2},
	}
	colors := []string{"#1f77b4", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	const width, labelW, barH, gap = 900, 150, 18, 4
	var body strings.Builder
	y := 30
	for _, p := range panels {
		var names []string
		var vals []float64
		for _, be := range r.backends {
			if s := med[[2]string{be, p.workload}]; s != nil {
				names = append(names, be)
				vals = append(vals, s.Metrics[p.metric])
			}
		}
		if len(vals) == 0 {
			continue
		}
		mx := slices.Max(vals)
		if mx <= 0 || math.IsInf(mx, 0) {
			mx = 1
		}
		fmt.Fprintf(&body, `<text x="10" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", y, xmlEsc(p.title))
		y += 10
		for i, n := range names {
			w := int(float64(width-labelW-120) * vals[i] / mx)
			fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>`+"\n", labelW-6, y+barH-5, xmlEsc(n))
			fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", labelW, y, max(w, 1), barH, colors[slices.Index(r.backends, n)%len(colors)])
			fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="12">%s%s</text>`+"\n", labelW+max(w, 1)+6, y+barH-5, f(vals[i], p.prec), p.unit)
			y += barH + gap
		}
		y += 30
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">`+"\n", width, y)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="16" font-size="11" fill="#555">lockbench %s, %d cores, median of %d run(s)</text>`+"\n", xmlEsc(r.meta.Time), r.meta.Nproc, r.opts.runs)
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.String()
}

func xmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
