package proctune

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseMemoryLimit(t *testing.T) {
	const cg, phys = 1 << 30, 8 << 30
	cases := []struct {
		in      string
		cg      int64
		want    int64
		wantErr string
	}{
		{in: "512MiB", cg: cg, want: 512 << 20},
		{in: "2GiB", want: 2 << 30},
		{in: "2G", want: 2 << 30},
		{in: "800MB", want: 800e6},
		{in: "800 MB", want: 800e6},
		{in: "1tib", want: 1 << 40},
		{in: "67108864", want: 64 << 20},
		{in: "67108864B", want: 64 << 20},
		{in: "off", want: 0},
		{in: "0", want: 0},
		{in: "50%", cg: cg, want: cg / 2},
		{in: "50%", want: phys / 2},
		{in: "12.5%", cg: cg, want: cg / 8},
		{in: "", wantErr: "non-negative whole number"},
		{in: "MiB", wantErr: "non-negative whole number"},
		{in: "12XB", wantErr: "unknown unit"},
		{in: "1.5GiB", wantErr: "whole number"},
		{in: "-1GiB", wantErr: "whole number"},
		{in: "100", wantErr: "below the minimum"},
		{in: "9999999TiB", wantErr: "too large"},
		{in: "0%", wantErr: "percentage"},
		{in: "101%", wantErr: "percentage"},
		{in: "NaN%", wantErr: "percentage"},
		{in: "x%", wantErr: "percentage"},
	}
	for _, c := range cases {
		got, err := parseMemoryLimit(c.in, c.cg, phys)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("parseMemoryLimit(%q) = %d, %v; want error containing %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := parseMemoryLimit("50%", 0, 0); err == nil {
		t.Error("a percentage with no known memory size was accepted")
	}
}

func TestPlanMemoryLimit(t *testing.T) {
	const cg, phys = 1 << 30, 8 << 30
	cgv := int64(cg)
	cgDefault := int64(float64(cgv) * defaultMemoryFraction)
	cases := []struct {
		name, flag, gomem string
		cg                int64
		want              MemLimitPlan
		wantErr           bool
	}{
		{name: "nothing", want: MemLimitPlan{source: memLimitNone}},
		{name: "cgroup default", cg: cg, want: MemLimitPlan{bytes: cgDefault, source: memLimitCgroupDef}},
		{name: "flag", flag: "256MiB", cg: cg, want: MemLimitPlan{bytes: 256 << 20, source: memLimitFlag}},
		{name: "flag off beats cgroup default", flag: "off", cg: cg, want: MemLimitPlan{source: memLimitNone}},
		{name: "GOMEMLIMIT wins over flag", flag: "256MiB", gomem: "1GiB", cg: cg, want: MemLimitPlan{source: memLimitGOMEM}},
		{name: "GOMEMLIMIT wins over cgroup", gomem: "1GiB", cg: cg, want: MemLimitPlan{source: memLimitGOMEM}},
		{name: "bad flag fails even with GOMEMLIMIT", flag: "lots", gomem: "1GiB", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := planMemoryLimit(c.flag, c.gomem, c.cg, phys)
			if c.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	write := func(root, p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{name: "no proc", want: 0},
		{name: "v2 unlimited", files: map[string]string{
			"proc/self/cgroup":               "0::/app\n",
			"sys/fs/cgroup/app/memory.max":   "max\n",
			"sys/fs/cgroup/memory.max":       "max\n",
			"sys/fs/cgroup/app/memory.other": "1\n",
		}},
		{name: "v2 own limit", files: map[string]string{
			"proc/self/cgroup":             "0::/app\n",
			"sys/fs/cgroup/app/memory.max": "536870912\n",
		}, want: 512 << 20},
		{name: "v2 ancestor binds", files: map[string]string{
			"proc/self/cgroup":                 "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max":     "max\n",
			"sys/fs/cgroup/a/memory.max":       "1073741824\n",
			"sys/fs/cgroup/memory.max":         "max\n",
			"sys/fs/cgroup/a/b/memory.current": "5\n",
		}, want: 1 << 30},
		{name: "v1 unlimited", files: map[string]string{
			"proc/self/cgroup": "4:memory:/p/x\n1:cpu:/\n0::/\n",
			"sys/fs/cgroup/memory/p/x/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n",
		}},
		{name: "v1 limit, shared controllers", files: map[string]string{
			"proc/self/cgroup": "4:cpu,memory:/p\n",
			"sys/fs/cgroup/memory/p/memory.limit_in_bytes": "268435456\n",
		}, want: 256 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for p, s := range c.files {
				write(root, p, s)
			}
			if got := cgroupMemoryLimit(root); got != c.want {
				t.Fatalf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestPlanGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name, flag, gogc string
		want             GCPercentPlan
		err              bool
	}{
		{"default auto", "", "", GCPercentPlan{auto: true}, false},
		{"auto", "auto", "", GCPercentPlan{auto: true, flagSet: true}, false},
		{"fixed", "80", "", GCPercentPlan{percent: 80, flagSet: true}, false},
		{"off", "off", "", GCPercentPlan{percent: -1, flagSet: true}, false},
		{"GOGC wins", "", "200", GCPercentPlan{auto: true, fromEnv: true}, false},
		{"GOGC wins over flag", "80", "200", GCPercentPlan{percent: 80, fromEnv: true, flagSet: true}, false},
		{"zero", "0", "", GCPercentPlan{}, true},
		{"negative", "-5", "", GCPercentPlan{}, true},
		{"too large", "10001", "", GCPercentPlan{}, true},
		{"junk", "50%", "", GCPercentPlan{}, true},
		{"junk even when GOGC wins", "fifty", "100", GCPercentPlan{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planGCPercent(tc.flag, tc.gogc)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlanGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env string
		want            GOMAXPROCSPlan
		err             bool
	}{
		{"default keeps Go's", "", "", GOMAXPROCSPlan{}, false},
		{"one", "1", "", GOMAXPROCSPlan{procs: 1, flagSet: true}, false},
		{"spaces", " 2 ", "", GOMAXPROCSPlan{procs: 2, flagSet: true}, false},
		{"zero is Go's default", "0", "", GOMAXPROCSPlan{flagSet: true}, false},
		{"GOMAXPROCS wins", "", "2", GOMAXPROCSPlan{fromEnv: true}, false},
		{"GOMAXPROCS wins over flag", "1", "4", GOMAXPROCSPlan{fromEnv: true, flagSet: true}, false},
		{"GOMAXPROCS=0 is ignored, as the runtime does", "1", "0", GOMAXPROCSPlan{procs: 1, flagSet: true}, false},
		{"GOMAXPROCS=auto is ignored", "1", "auto", GOMAXPROCSPlan{procs: 1, flagSet: true}, false},
		{"negative", "-1", "", GOMAXPROCSPlan{}, true},
		{"too large", "4097", "", GOMAXPROCSPlan{}, true},
		{"auto is not a value", "auto", "", GOMAXPROCSPlan{}, true},
		{"junk", "two", "", GOMAXPROCSPlan{}, true},
		{"junk even when GOMAXPROCS wins", "1.5", "2", GOMAXPROCSPlan{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planGOMAXPROCS(tc.flag, tc.env)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAutoGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},         // nothing measured yet: Go's default
		{8 * mib, 400},   // small heap: capped
		{32 * mib, 200},  // headroom = 2 × live
		{64 * mib, 100},  // headroom = live
		{128 * mib, 50},  // 64 MiB over 128 MiB
		{200 * mib, 32},  // 1M locks: 64/200
		{320 * mib, 20},  // at the floor
		{4096 * mib, 20}, // never below the floor
	} {
		if got := autoGCPercent(tc.live, 64*mib, 20, 400); got != tc.want {
			t.Errorf("live %d MiB: %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// The tuner sets the percentage at start and after each collection it is
// told of, and only then: without a collection it does nothing.
func TestGCTunerFollowsLiveHeap(t *testing.T) {
	var live atomic.Uint64
	live.Store(8 << 20)
	set := make(chan int, 16)
	cycles := make(chan struct{})
	stop := startGCTuner(cycles, live.Load, func(p int) int { set <- p; return 0 })
	defer stop()
	got := func() int {
		t.Helper()
		select {
		case p := <-set:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no percentage set")
			return 0
		}
	}
	if p := got(); p != 250 { // set at once, before any collection: 20 MiB over 8
		t.Fatalf("first percentage %d, want 250", p)
	}
	live.Store(AutoGCHeadroom * 2)
	// Nothing is set until a collection is signalled (the unbuffered
	// send returns once the tuner took it).
	select {
	case p := <-set:
		t.Fatalf("set %d with no collection", p)
	default:
	}
	cycles <- struct{}{}
	if p := got(); p != 50 {
		t.Fatalf("after a collection at twice the headroom: %d, want 50", p)
	}
	live.Store(AutoGCHeadroom * 100)
	cycles <- struct{}{}
	if p := got(); p != AutoGCMinPercent {
		t.Fatalf("after a collection at 100 times the headroom: %d, want %d", p, AutoGCMinPercent)
	}
	stop()
	stop() // a second stop is harmless
	// stop returned after the tuner goroutine ended, and live did not
	// change since the last set: nothing may be pending.
	live.Store(1)
	select {
	case p := <-set:
		t.Fatalf("set %d after stop", p)
	default:
	}
}

// notifyGCCycles signals after every collection, one after another.
func TestNotifyGCCycles(t *testing.T) {
	ch := make(chan struct{}, 1)
	stop := notifyGCCycles(ch)
	defer stop()
	for i := range 3 {
		// Drop a signal of a collection before this round's.
		select {
		case <-ch:
		default:
		}
		runtime.GC()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("collection %d: no signal within 10s", i)
		}
	}
}
