package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Process-wide runtime settings shared by serve and dev: the Go memory
// limit and the optional pprof listener.

// defaultMemoryFraction is the share of a cgroup memory limit used as the
// Go soft memory limit when none is configured. Without a soft limit Go
// lets the heap grow to twice the live data (GOGC=100) whatever the
// container allows, so a node holding a large table is OOM-killed at a
// size it could have lived with by collecting more often; 90 % leaves
// room for what the limit does not count (thread stacks outside Go, page
// cache charged to the cgroup, the kernel's own accounting). Outside a
// cgroup limit no default is set: the machine's physical memory is shared
// with other processes, and a fraction of it says nothing about what this
// node may use.
const defaultMemoryFraction = 0.9

// memLimitSource says where the effective memory limit came from.
type memLimitSource string

const (
	memLimitNone      memLimitSource = "none"
	memLimitGOMEM     memLimitSource = "GOMEMLIMIT"
	memLimitFlag      memLimitSource = "flag"
	memLimitCgroupDef memLimitSource = "cgroup"
)

// memLimitPlan is what applyMemoryLimit will do.
type memLimitPlan struct {
	bytes   int64 // 0: leave the runtime's limit alone
	source  memLimitSource
	flagSet bool // --memory-limit was given (for the GOMEMLIMIT warning)
}

// planMemoryLimit decides the memory limit from the flag value (may be
// empty), the GOMEMLIMIT environment variable (the Go runtime already
// applied it; it wins so operators keep the standard knob) and the
// cgroup limit (0: none). It returns an error for a malformed flag even
// when GOMEMLIMIT wins, so a typo never goes unnoticed.
func planMemoryLimit(flagVal, gomemlimit string, cgroupLimit, physical int64) (memLimitPlan, error) {
	var fromFlag int64
	set := false
	if s := strings.TrimSpace(flagVal); s != "" {
		v, err := parseMemoryLimit(s, cgroupLimit, physical)
		if err != nil {
			return memLimitPlan{}, err
		}
		fromFlag, set = v, true
	}
	switch {
	case gomemlimit != "":
		return memLimitPlan{source: memLimitGOMEM}, nil
	case set && fromFlag == 0:
		return memLimitPlan{source: memLimitNone}, nil
	case set:
		return memLimitPlan{bytes: fromFlag, source: memLimitFlag}, nil
	case cgroupLimit > 0:
		return memLimitPlan{bytes: int64(float64(cgroupLimit) * defaultMemoryFraction), source: memLimitCgroupDef}, nil
	}
	return memLimitPlan{source: memLimitNone}, nil
}

// parseMemoryLimit reads a memory limit: bytes with an optional unit
// (B, KiB, MiB, GiB, TiB as in GOMEMLIMIT; KB, MB, GB, TB decimal; K, M,
// G, T binary), a percentage of the cgroup limit or, without one, of the
// physical memory ("75%"), or "off"/"0" for none.
func parseMemoryLimit(s string, cgroupLimit, physical int64) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "none" {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return 0, fmt.Errorf("memory limit %q: want a percentage in (0, 100]", s)
		}
		base := cgroupLimit
		if base <= 0 {
			base = physical
		}
		if base <= 0 {
			return 0, fmt.Errorf("memory limit %q: neither a cgroup limit nor the physical memory size is known", s)
		}
		return int64(float64(base) * f / 100), nil
	}
	v, err := parseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q: %w", s, err)
	}
	if v != 0 && v < minMemoryLimit {
		return 0, fmt.Errorf("memory limit %q: below the minimum of %d MiB", s, minMemoryLimit>>20)
	}
	return v, nil
}

// minMemoryLimit refuses limits a node cannot start under (the runtime
// would collect continuously): almost certainly a missing unit.
const minMemoryLimit = 16 << 20

// parseBytes reads a size: a whole number with an optional unit (B, KiB,
// MiB, GiB, TiB; KB, MB, GB, TB decimal; K, M, G, T binary). Every flag
// that takes a size reads it here.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", unit)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a non-negative whole number with an optional unit, e.g. 512MiB")
	}
	if v > math.MaxInt64/mult {
		return 0, fmt.Errorf("too large")
	}
	return v * mult, nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

const memoryLimitUsage = "Go soft memory limit: bytes with a unit (512MiB, 2GiB, 800MB), a percentage of the cgroup limit or else of physical memory (75%), or off; " +
	"default: 90% of the cgroup memory limit if there is one, else none. GOMEMLIMIT, if set, wins"

// memoryLimit plans the process's memory limit from the flag, GOMEMLIMIT
// and the cgroup, without applying it (so a bad value changes nothing).
func memoryLimit(flagVal string) (memLimitPlan, error) {
	p, err := planMemoryLimit(flagVal, os.Getenv("GOMEMLIMIT"), cgroupMemoryLimit("/"), physicalMemory())
	p.flagSet = strings.TrimSpace(flagVal) != ""
	return p, err
}

// apply sets the planned limit and logs the outcome.
func (p memLimitPlan) apply(log hclog.Logger) {
	switch p.source {
	case memLimitGOMEM:
		if p.flagSet {
			log.Warn("GOMEMLIMIT is set and wins over --memory-limit", "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		}
		log.Info("memory limit", "bytes", debug.SetMemoryLimit(-1), "source", p.source)
	case memLimitNone:
		log.Info("memory limit", "bytes", "none", "source", p.source)
	default:
		debug.SetMemoryLimit(p.bytes)
		log.Info("memory limit", "bytes", p.bytes, "source", p.source)
	}
}

// The Go GC target (GOGC) locknode uses by default: "auto", a GC
// percentage that shrinks as the live heap grows, so the heap's headroom
// over the live data stays near autoGCHeadroom instead of growing with
// the table. A node's heap is almost all long-lived lock table: at
// GOGC=100 it doubles the resident set of a large table, and a fixed
// lower percentage costs throughput while the table is small; a headroom
// in bytes keeps Go's 100 % for small tables and collects after a fixed
// amount of allocation for large ones (bench/results/tuning.md#gc-percent).
const (
	autoGCHeadroom   = 20 << 20
	autoGCMinPercent = 10  // never collect more often than at 10 % growth
	autoGCMaxPercent = 100 // never hold more than Go's default would
	autoGCEvery      = 500 * time.Millisecond
)

var gcPercentUsage = fmt.Sprintf("Go GC target: auto (a percentage that keeps the heap within about %d MiB of the live data, %d-%d), "+
	"a percentage (heap growth over live data before a collection, as GOGC), or off; default auto. GOGC, if set, wins",
	autoGCHeadroom>>20, autoGCMinPercent, autoGCMaxPercent)

// gcPercentPlan is what gcPercentPlan.apply will do.
type gcPercentPlan struct {
	auto    bool
	percent int  // when !auto; -1: off
	fromEnv bool // GOGC is set: leave the runtime's setting alone
	flagSet bool
}

// planGCPercent decides the GC target from the flag value (may be
// empty) and GOGC (the runtime already applied it; it wins). A malformed
// flag is an error even when GOGC wins.
func planGCPercent(flagVal, gogc string) (gcPercentPlan, error) {
	p := gcPercentPlan{auto: true}
	switch s := strings.TrimSpace(flagVal); s {
	case "", "auto":
		p.flagSet = s != ""
	case "off":
		p = gcPercentPlan{percent: -1, flagSet: true}
	default:
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 10000 {
			return gcPercentPlan{}, fmt.Errorf("gc percent %q: want auto, a whole number from 1 to 10000, or off", s)
		}
		p = gcPercentPlan{percent: v, flagSet: true}
	}
	p.fromEnv = gogc != ""
	return p, nil
}

// planRuntime checks the --pprof, --memory-limit and --gc-percent values
// of command cmd; on a bad one it says so on stderr and returns false.
func planRuntime(cmd string, stderr io.Writer, pprofAddr, memLimit, gcPct string) (memLimitPlan, gcPercentPlan, bool) {
	if pprofAddr != "" {
		if err := checkPprofAddr(pprofAddr); err != nil {
			fmt.Fprintf(stderr, "%s: --pprof: %v\n", cmd, err)
			return memLimitPlan{}, gcPercentPlan{}, false
		}
	}
	memPlan, err := memoryLimit(memLimit)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --memory-limit: %v\n", cmd, err)
		return memLimitPlan{}, gcPercentPlan{}, false
	}
	gcPlan, err := gcPercent(gcPct)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --gc-percent: %v\n", cmd, err)
		return memLimitPlan{}, gcPercentPlan{}, false
	}
	return memPlan, gcPlan, true
}

// gcPercent plans the GC target from the flag and GOGC.
func gcPercent(flagVal string) (gcPercentPlan, error) {
	return planGCPercent(flagVal, os.Getenv("GOGC"))
}

// apply sets a fixed planned GC percentage and logs the plan; the auto
// tuner is started by startTuner.
func (p gcPercentPlan) apply(log hclog.Logger) {
	switch {
	case p.fromEnv:
		if p.flagSet {
			log.Warn("GOGC is set and wins over --gc-percent", "GOGC", os.Getenv("GOGC"))
		}
		log.Info("gc percent", "percent", os.Getenv("GOGC"), "source", "GOGC")
	case p.auto:
		log.Info("gc percent", "percent", "auto", "headroom", autoGCHeadroom, "min", autoGCMinPercent, "max", autoGCMaxPercent)
	default:
		debug.SetGCPercent(p.percent)
		log.Info("gc percent", "percent", p.percent, "source", "flag")
	}
}

// startTuner starts the auto tuner if that is the plan; the returned
// func stops it. serve calls it once the node has started: a restore of
// the table at start grows the live heap from nothing, and collecting it
// at the tuner's low percentages would only slow the restore (Go's 100 %
// applies until then; the heap is trimmed at the first collection
// after).
func (p gcPercentPlan) startTuner() (stop func()) {
	if !p.auto || p.fromEnv {
		return func() {}
	}
	return startGCTuner(autoGCEvery, liveHeap, debug.SetGCPercent)
}

// autoGCPercent is the GC percentage that lets a heap with live bytes
// grow by about headroom before the next collection, within [lo, hi].
func autoGCPercent(live, headroom uint64, lo, hi int) int {
	if live == 0 {
		return hi
	}
	p := headroom * 100 / live
	switch {
	case p < uint64(lo):
		return lo
	case p > uint64(hi):
		return hi
	}
	return int(p)
}

// liveHeap is the heap marked live by the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// startGCTuner sets the GC percentage from the live heap now and every
// interval after, through set (debug.SetGCPercent; tests pass a fake),
// until the returned func is called. The live heap changes only at a
// collection, and a collection's goal uses the percentage current when
// it is computed, so polling is enough: a table that grows between two
// polls is collected at most one cycle late by the older percentage.
func startGCTuner(every time.Duration, live func() uint64, set func(int) int) (stop func()) {
	last := autoGCPercent(live(), autoGCHeadroom, autoGCMinPercent, autoGCMaxPercent)
	set(last)
	done, exited := make(chan struct{}), make(chan struct{})
	// Ends when stop closes done.
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if p := autoGCPercent(live(), autoGCHeadroom, autoGCMinPercent, autoGCMaxPercent); p != last {
				set(p)
				last = p
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}

// cgroupMemoryLimit returns the smallest memory limit of this process's
// cgroup and its ancestors (v2 memory.max, v1 memory.limit_in_bytes),
// 0 when there is none or it cannot be read. root is the file system
// root ("/"; tests pass a fake tree).
func cgroupMemoryLimit(root string) int64 {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	defer f.Close()
	var best int64
	consider := func(dir, rel, file string) {
		// Walk from the process's cgroup up to the mount's root: an
		// ancestor's limit binds as well.
		rel = filepath.Clean("/" + rel)
		for {
			if v := readLimit(filepath.Join(root, dir, rel, file)); v > 0 && (best == 0 || v < best) {
				best = v
			}
			if rel == "/" {
				return
			}
			rel = filepath.Dir(rel)
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			consider("sys/fs/cgroup", parts[2], "memory.max")
		case hasController(parts[1], "memory"):
			consider("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads one cgroup limit file; "max", v1's "unlimited" (a
// value near MaxInt64) and unreadable files are 0.
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}

// physicalMemory returns MemTotal from /proc/meminfo, 0 if unknown.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// pprofServer serves net/http/pprof on its own listener, apart from the
// API so profiling is never exposed on the client port by accident.
type pprofServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

var errPprofAddr = errors.New("want host:port")

// checkPprofAddr rejects a --pprof value that is not host:port, before
// anything starts.
func checkPprofAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, errPprofAddr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: bad port: %w", addr, errPprofAddr)
	}
	return nil
}

// startPprof listens on addr and serves /debug/pprof/ there.
func startPprof(addr string, log hclog.Logger) (*pprofServer, error) {
	if err := checkPprofAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{
		ln:   ln,
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	// Ends when Close shuts the server down (Serve then returns).
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server", "error", err)
		}
	}()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return p, nil
}

// Addr is the bound address.
func (p *pprofServer) Addr() string { return p.ln.Addr().String() }

// Close stops the server; a profile being taken is cut short.
func (p *pprofServer) Close() {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close()
	}
	<-p.done
}
