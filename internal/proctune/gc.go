package proctune

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// The Go GC target (GOGC) locknode uses by default: "auto", a GC
// percentage that shrinks as the live heap grows, so the heap's headroom
// over the live data stays near AutoGCHeadroom instead of growing with
// the table. A node's heap is almost all long-lived lock table: at
// GOGC=100 it doubles the resident set of a large table, and a fixed
// lower percentage costs throughput while the table is small; a headroom
// in bytes collects after a fixed amount of allocation for large tables,
// and lets a small table's heap grow by the same headroom: at Go's 100 %
// a node whose live heap is a few MiB collected several times a second
// under load, a tenth of its CPU (bench/results/tuning.md#gc-percent).
const (
	AutoGCHeadroom   = 20 << 20
	AutoGCMinPercent = 10  // never collect more often than at 10 % growth
	AutoGCMaxPercent = 400 // a heap under 5 MiB live grows to at most 5×
)

// GCPercentPlan is what GCPercentPlan.Apply will do.
type GCPercentPlan struct {
	auto    bool
	percent int  // when !auto; -1: off
	fromEnv bool // GOGC is set: leave the runtime's setting alone
	flagSet bool
}

// planGCPercent decides the GC target from the flag value (may be
// empty) and GOGC (the runtime already applied it; it wins). A malformed
// flag is an error even when GOGC wins.
func planGCPercent(flagVal, gogc string) (GCPercentPlan, error) {
	p := GCPercentPlan{auto: true}
	switch s := strings.TrimSpace(flagVal); s {
	case "", "auto":
		p.flagSet = s != ""
	case "off":
		p = GCPercentPlan{percent: -1, flagSet: true}
	default:
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 10000 {
			return GCPercentPlan{}, fmt.Errorf("gc percent %q: want auto, a whole number from 1 to 10000, or off", s)
		}
		p = GCPercentPlan{percent: v, flagSet: true}
	}
	p.fromEnv = gogc != ""
	return p, nil
}

// GCPercent plans the GC target from the flag and GOGC.
func GCPercent(flagVal string) (GCPercentPlan, error) {
	return planGCPercent(flagVal, os.Getenv("GOGC"))
}

// Apply sets a fixed planned GC percentage and logs the plan; the auto
// tuner is started by StartTuner.
func (p GCPercentPlan) Apply(log hclog.Logger) {
	switch {
	case p.fromEnv:
		if p.flagSet {
			log.Warn("GOGC is set and wins over --gc-percent", "GOGC", os.Getenv("GOGC"))
		}
		log.Info("gc percent", "percent", os.Getenv("GOGC"), "source", "GOGC")
	case p.auto:
		log.Info("gc percent", "percent", "auto", "headroom", AutoGCHeadroom, "min", AutoGCMinPercent, "max", AutoGCMaxPercent)
	default:
		debug.SetGCPercent(p.percent)
		log.Info("gc percent", "percent", p.percent, "source", "flag")
	}
}

// StartTuner starts the auto tuner if that is the plan; the returned
// func stops it. serve calls it once the node has started: a restore of
// the table at start grows the live heap from nothing, and collecting it
// at the tuner's low percentages would only slow the restore (Go's 100 %
// applies until then; the heap is trimmed at the first collection
// after).
func (p GCPercentPlan) StartTuner() (stop func()) {
	if !p.auto || p.fromEnv {
		return func() {}
	}
	cycles := make(chan struct{}, 1)
	stopNotify := notifyGCCycles(cycles)
	stopTuner := startGCTuner(cycles, liveHeap, debug.SetGCPercent)
	return func() {
		stopNotify()
		stopTuner()
	}
}

// autoGCPercent is the GC percentage that lets a heap with live bytes
// grow by about headroom before the next collection, within [lo, hi].
func autoGCPercent(live, headroom uint64, lo, hi int) int {
	if live == 0 {
		// Nothing measured yet: Go's default, within the bounds.
		return max(lo, min(hi, 100))
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

// startGCTuner sets the GC percentage from the live heap now and after
// each collection (a receive on cycles), through set
// (debug.SetGCPercent; tests pass a fake), until the returned func is
// called. The live heap changes only at a collection, so that is the only
// time to look: a poll on a timer woke every node of an idle cluster
// twice a second to find the same figure, and let a grown table be
// collected by the older percentage until the next poll.
func startGCTuner(cycles <-chan struct{}, live func() uint64, set func(int) int) (stop func()) {
	last := autoGCPercent(live(), AutoGCHeadroom, AutoGCMinPercent, AutoGCMaxPercent)
	set(last)
	done, exited := make(chan struct{}), make(chan struct{})
	// Ends when stop closes done.
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-cycles:
			}
			if p := autoGCPercent(live(), AutoGCHeadroom, AutoGCMinPercent, AutoGCMaxPercent); p != last {
				set(p)
				last = p
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}

// gcSentinel is what notifyGCCycles watches: 32 bytes, so that it is not
// a tiny allocation (whose cleanup may never run).
type gcSentinel struct{ _ [32]byte }

// notifyGCCycles sends on ch (without blocking: a pending signal is
// enough) after every garbage collection, until the returned func is
// called. Each signal comes from the cleanup of an object allocated for
// the purpose and dropped, which the next collection finds unreachable;
// the cleanup allocates the next one before it signals, so a collection
// that follows the signal is seen too. Go forces a collection at least
// every two minutes, so signals keep coming on an idle process.
func notifyGCCycles(ch chan<- struct{}) (stop func()) {
	var stopped atomic.Bool
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(gcSentinel), func(struct{}) {
			if stopped.Load() {
				return
			}
			arm()
			select {
			case ch <- struct{}{}:
			default:
			}
		}, struct{}{})
	}
	arm()
	return func() { stopped.Store(true) }
}
