package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
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
		want              memLimitPlan
		wantErr           bool
	}{
		{name: "nothing", want: memLimitPlan{source: memLimitNone}},
		{name: "cgroup default", cg: cg, want: memLimitPlan{bytes: cgDefault, source: memLimitCgroupDef}},
		{name: "flag", flag: "256MiB", cg: cg, want: memLimitPlan{bytes: 256 << 20, source: memLimitFlag}},
		{name: "flag off beats cgroup default", flag: "off", cg: cg, want: memLimitPlan{source: memLimitNone}},
		{name: "GOMEMLIMIT wins over flag", flag: "256MiB", gomem: "1GiB", cg: cg, want: memLimitPlan{source: memLimitGOMEM}},
		{name: "GOMEMLIMIT wins over cgroup", gomem: "1GiB", cg: cg, want: memLimitPlan{source: memLimitGOMEM}},
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

func TestCheckPprofAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", ":6060", "localhost:6060", "[::1]:6060"} {
		if err := checkPprofAddr(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"6060", "127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", "a:b:c"} {
		if err := checkPprofAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPprofServer(t *testing.T) {
	p, err := startPprof("127.0.0.1:0", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + p.Addr() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("heap profile")) {
		t.Fatalf("heap profile: %d %.200q", resp.StatusCode, body)
	}
	// Only pprof is served there.
	resp, err = http.Get("http://" + p.Addr() + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/v1/status on the pprof port: %d", resp.StatusCode)
	}
	p.Close()
	if _, err := http.Get("http://" + p.Addr() + "/debug/pprof/"); err == nil {
		t.Fatal("pprof still served after Close")
	}
}

// Bad --pprof and --memory-limit values stop serve and dev with exit
// code 2 and a message before anything starts (no data directory is
// created, the process's memory limit is unchanged).
func TestRuntimeFlagsRejected(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	procsBefore := runtime.GOMAXPROCS(0)
	cases := []struct {
		cmd  string
		args []string
		want string
	}{
		{"serve", []string{"--pprof", "6060"}, "--pprof"},
		{"serve", []string{"--pprof", "localhost:http-alt"}, "--pprof"},
		{"serve", []string{"--memory-limit", "lots"}, "--memory-limit"},
		{"serve", []string{"--memory-limit", "300"}, "below the minimum"},
		{"serve", []string{"--memory-limit", "150%"}, "percentage"},
		{"serve", []string{"--gomaxprocs", "two"}, "--gomaxprocs"},
		{"serve", []string{"--gomaxprocs", "-1"}, "--gomaxprocs"},
		{"dev", []string{"--pprof", "nope"}, "--pprof"},
		{"dev", []string{"--memory-limit", "1.5G"}, "--memory-limit"},
	}
	for _, c := range cases {
		t.Run(c.cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"--data", data}, c.args...)
			if c.cmd == "serve" {
				args = append(args, "--id", "n1", "--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--bootstrap")
			}
			var stderr bytes.Buffer
			code := commands[c.cmd].run(context.Background(), args, io.Discard, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("data directory created: %v", err)
			}
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Fatalf("memory limit changed to %d", got)
			}
			if got := runtime.GOMAXPROCS(0); got != procsBefore {
				t.Fatalf("GOMAXPROCS changed to %d", got)
			}
		})
	}
}

// serve applies --memory-limit and --gomaxprocs and serves pprof on
// --pprof.
func TestServeRuntimeFlags(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set; it wins over --memory-limit")
	}
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set; it wins over --gomaxprocs")
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	procsBefore := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procsBefore) })
	wantProcs := procsBefore + 1 // differs from whatever the process had

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var logs syncBuffer
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runServe returns)
		c := runServe(ctx, []string{"--id", "n1", "--data", t.TempDir(), "--bootstrap",
			"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0",
			"--pprof", "127.0.0.1:0", "--memory-limit", "3GiB", "--gomaxprocs", strconv.Itoa(wantProcs)}, pw, &logs)
		pw.Close()
		code <- c
	}()
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("serve exited %d; log:\n%s", c, logs.String())
		}
	}()
	line, err := readLine(pr)
	if err != nil || !strings.HasPrefix(line, "node n1 ") {
		t.Fatalf("first line %q, %v; log:\n%s", line, err, logs.String())
	}
	go io.Copy(io.Discard, pr) // ends when runServe closes pw

	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Fatalf("memory limit %d, want %d", got, int64(3<<30))
	}
	if got := runtime.GOMAXPROCS(0); got != wantProcs {
		t.Fatalf("GOMAXPROCS %d, want %d", got, wantProcs)
	}
	addr := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if _, rest, ok := strings.Cut(l, "pprof listening: addr="); ok {
			addr = strings.TrimSpace(rest)
		}
	}
	if addr == "" {
		t.Fatalf("no pprof address logged:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("goroutine profile")) {
		t.Fatalf("goroutine profile: %d %.200q", resp.StatusCode, body)
	}
}

// readLine reads one line from r byte by byte, so nothing after it is
// consumed.
func readLine(r io.Reader) (string, error) {
	var b []byte
	var c [1]byte
	for {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return string(b), err
		}
		if c[0] == '\n' {
			return string(b), nil
		}
		b = append(b, c[0])
	}
}

func TestPlanGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name, flag, gogc string
		want             gcPercentPlan
		err              bool
	}{
		{"default auto", "", "", gcPercentPlan{auto: true}, false},
		{"auto", "auto", "", gcPercentPlan{auto: true, flagSet: true}, false},
		{"fixed", "80", "", gcPercentPlan{percent: 80, flagSet: true}, false},
		{"off", "off", "", gcPercentPlan{percent: -1, flagSet: true}, false},
		{"GOGC wins", "", "200", gcPercentPlan{auto: true, fromEnv: true}, false},
		{"GOGC wins over flag", "80", "200", gcPercentPlan{percent: 80, fromEnv: true, flagSet: true}, false},
		{"zero", "0", "", gcPercentPlan{}, true},
		{"negative", "-5", "", gcPercentPlan{}, true},
		{"too large", "10001", "", gcPercentPlan{}, true},
		{"junk", "50%", "", gcPercentPlan{}, true},
		{"junk even when GOGC wins", "fifty", "100", gcPercentPlan{}, true},
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
		want            gomaxprocsPlan
		err             bool
	}{
		{"default keeps Go's", "", "", gomaxprocsPlan{}, false},
		{"one", "1", "", gomaxprocsPlan{procs: 1, flagSet: true}, false},
		{"spaces", " 2 ", "", gomaxprocsPlan{procs: 2, flagSet: true}, false},
		{"zero is Go's default", "0", "", gomaxprocsPlan{flagSet: true}, false},
		{"GOMAXPROCS wins", "", "2", gomaxprocsPlan{fromEnv: true}, false},
		{"GOMAXPROCS wins over flag", "1", "4", gomaxprocsPlan{fromEnv: true, flagSet: true}, false},
		{"GOMAXPROCS=0 is ignored, as the runtime does", "1", "0", gomaxprocsPlan{procs: 1, flagSet: true}, false},
		{"GOMAXPROCS=auto is ignored", "1", "auto", gomaxprocsPlan{procs: 1, flagSet: true}, false},
		{"negative", "-1", "", gomaxprocsPlan{}, true},
		{"too large", "4097", "", gomaxprocsPlan{}, true},
		{"auto is not a value", "auto", "", gomaxprocsPlan{}, true},
		{"junk", "two", "", gomaxprocsPlan{}, true},
		{"junk even when GOMAXPROCS wins", "1.5", "2", gomaxprocsPlan{}, true},
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
		{8 * mib, 100},   // small heap: capped at Go's default
		{64 * mib, 100},  // headroom = live
		{128 * mib, 50},  // 64 MiB over 128 MiB
		{200 * mib, 32},  // 1M locks: 64/200
		{320 * mib, 20},  // at the floor
		{4096 * mib, 20}, // never below the floor
	} {
		if got := autoGCPercent(tc.live, 64*mib, 20, 100); got != tc.want {
			t.Errorf("live %d MiB: %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

func TestGCTunerFollowsLiveHeap(t *testing.T) {
	var live atomic.Uint64
	live.Store(8 << 20)
	set := make(chan int, 16)
	stop := startGCTuner(time.Millisecond, live.Load, func(p int) int { set <- p; return 0 })
	defer stop()
	wait := func(want int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case p := <-set:
				if p == want {
					return
				}
			case <-deadline:
				t.Fatalf("percentage %d never set", want)
			}
		}
	}
	wait(100) // set at once, before the first tick
	live.Store(autoGCHeadroom * 2)
	wait(50)
	live.Store(autoGCHeadroom * 100)
	wait(autoGCMinPercent)
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
