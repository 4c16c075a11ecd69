// Command watchbench measures HTTP blocking queries at scale: it starts
// one `locknode serve` process, parks -watchers blocking queries on it
// (GET /v1/locks/{key}?index=N&wait=5m, each on its own connection),
// measures the node's CPU while nothing changes, then changes the lock
// -rounds times (take, release, ...) and measures how long each watcher
// takes to get its answer, from the moment the change was sent.
//
//	cd bench && go run ./cmd/watchbench -watchers 10000
//
// The node's CPU comes from /proc/<pid>/stat (Linux only). The watchers
// run in this process, on the same machine: their own work (10,000
// answers to read and re-ask) is part of the latency measured.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locknode/locknode/api"
)

func main() {
	var (
		watchers = flag.Int("watchers", 10000, "blocking queries to park on the node")
		keys     = flag.Int("keys", 1, "spread the watchers over this many keys (the change hits the first)")
		idle     = flag.Duration("idle", 10*time.Second, "window to measure the node's CPU while nothing changes")
		rounds   = flag.Int("rounds", 6, "changes of the watched lock (take, release, ...)")
		count    = flag.Int("nodes", 1, "cluster size; with more than 1 the watchers park on a follower")
		bin      = flag.String("bin", "", "locknode binary (default: go build ../cmd/locknode)")
		extra    = flag.String("node-args", "", "more arguments for locknode serve, space-separated (e.g. --pprof 127.0.0.1:6060)")
	)
	flag.Parse()
	nodeArgs = strings.Fields(*extra)
	if err := run(*watchers, *keys, *idle, *rounds, *bin, *count); err != nil {
		fmt.Fprintln(os.Stderr, "watchbench:", err)
		os.Exit(1)
	}
}

// nodeArgs are -node-args.
var nodeArgs []string

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// cpuTicks is utime+stime of pid, in clock ticks (USER_HZ, 100 on Linux).
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

const hz = 100.0

type node struct {
	cmd  *exec.Cmd
	id   string
	base string
	dir  string
}

// startCluster starts count nodes bootstrapped as one cluster and waits
// until each is ready.
func startCluster(bin string, count int) ([]*node, error) {
	dir, err := os.MkdirTemp("", "watchbench-")
	if err != nil {
		return nil, err
	}
	if bin == "" {
		bin = filepath.Join(dir, "locknode")
		b := exec.Command("go", "build", "-o", bin, "./cmd/locknode")
		b.Dir = ".." // the repository root: its own module, with the raft fork
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return nil, fmt.Errorf("building locknode: %w", err)
		}
	}
	rafts := make([]string, count)
	peers := make([]string, count)
	for i := range count {
		rafts[i] = freePort()
		peers[i] = fmt.Sprintf("n%d=%s", i+1, rafts[i])
	}
	var nodes []*node
	stopAll := func() {
		for _, n := range nodes {
			n.stop()
		}
		_ = os.RemoveAll(dir)
	}
	for i := range count {
		id, httpAddr := fmt.Sprintf("n%d", i+1), freePort()
		args := []string{"serve", "--id", id, "--data", filepath.Join(dir, id), "--raft-addr", rafts[i],
			"--http-addr", httpAddr, "--resp-addr", freePort(), "--bootstrap", "--peers", strings.Join(peers, ","),
			"--max-watchers", "0", "--http-max-conns", "19000", "--resp-max-clients", "100", "--http-max-conns-per-addr", "0", "--log-level", "warn"}
		args = append(args, nodeArgs...)
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			stopAll()
			return nil, err
		}
		fmt.Printf("node: %s %s\n", bin, strings.Join(args, " "))
		nodes = append(nodes, &node{cmd: cmd, id: id, base: "http://" + httpAddr, dir: dir})
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range nodes {
		for {
			resp, err := http.Get(n.base + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				stopAll()
				return nil, fmt.Errorf("node %s not ready within 60s", n.id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes, nil
}

// leaderOf returns the index in nodes of the leader nodes[0] knows.
func leaderOf(nodes []*node) (int, error) {
	resp, err := http.Get(nodes[0].base + "/v1/status")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st api.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, err
	}
	for i, n := range nodes {
		if n.id == st.Leader {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no leader known (%q)", st.Leader)
}

func (n *node) stop() {
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
}

// gauge reads one metric's value from /metrics.
func gauge(c *http.Client, base, name string) (float64, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no metric %s", name)
}

func waitWatchers(c *http.Client, base string, want int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		v, err := gauge(c, base, "locknode_http_watchers")
		if err == nil && int(v) == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("locknode_http_watchers = %v (%v), want %d", v, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answer is one watcher's answer: when it came and the index it carried.
type answer struct {
	at    time.Time
	index uint64
}

func run(watchers, keys int, idle time.Duration, rounds int, bin string, count int) error {
	nodes, err := startCluster(bin, count)
	if err != nil {
		return err
	}
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
		_ = os.RemoveAll(nodes[0].dir)
	}()
	li, err := leaderOf(nodes)
	if err != nil {
		return err
	}
	// The watchers park on a follower when there is one; the changes go
	// to the leader.
	n, leader := nodes[li], nodes[li]
	if count > 1 {
		n = nodes[(li+1)%count]
	}
	pid, lpid := n.cmd.Process.Pid, leader.cmd.Process.Pid
	fmt.Printf("watchers on %s, changes through %s (leader)\n", n.id, leader.id)

	tr := &http.Transport{MaxIdleConnsPerHost: watchers + 100, IdleConnTimeout: 0, DisableCompression: true}
	wc := &http.Client{Transport: tr}
	ctl := &http.Client{Transport: &http.Transport{}}

	// Baseline: the idle node without watchers.
	time.Sleep(2 * time.Second)
	t0, _ := cpuTicks(pid)
	time.Sleep(idle)
	t1, _ := cpuTicks(pid)
	base0 := float64(t1-t0) / hz / idle.Seconds()

	key := func(i int) string { return fmt.Sprintf("watched/%d", i%keys) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := make(chan answer, watchers)
	var wg sync.WaitGroup
	// The index each watcher starts from: a plain read's.
	startIdx := make([]uint64, keys)
	for k := range keys {
		resp, err := ctl.Get(n.base + "/v1/locks/" + strings.ReplaceAll(key(k), "/", "%2F"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		startIdx[k], _ = strconv.ParseUint(resp.Header.Get("X-Locknode-Index"), 10, 64)
	}
	opened := time.Now()
	for i := range watchers {
		wg.Add(1)
		// Ends when ctx is cancelled (its request fails).
		go func() {
			defer wg.Done()
			idx := startIdx[i%keys]
			url := n.base + "/v1/locks/" + strings.ReplaceAll(key(i), "/", "%2F") + "?wait=5m&index="
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+strconv.FormatUint(idx, 10), nil)
				resp, err := wc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						fmt.Fprintln(os.Stderr, "watcher:", err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				var info api.LockInfo
				err = json.NewDecoder(resp.Body).Decode(&info)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				at := time.Now()
				if err != nil || resp.StatusCode != 200 {
					fmt.Fprintln(os.Stderr, "watcher: answer", resp.StatusCode, err)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if info.Index != idx && i%keys == 0 {
					answers <- answer{at: at, index: info.Index}
				}
				idx = info.Index
			}
		}()
	}
	if err := waitWatchers(ctl, n.base, watchers, 2*time.Minute); err != nil {
		return err
	}
	fmt.Printf("%d watchers parked in %v; node RSS %.0f MiB\n", watchers, time.Since(opened).Round(time.Millisecond), rssMiB(pid))

	time.Sleep(2 * time.Second)
	t0, _ = cpuTicks(pid)
	time.Sleep(idle)
	t1, _ = cpuTicks(pid)
	busy := float64(t1-t0) / hz / idle.Seconds()

	onKey0 := (watchers + keys - 1) / keys
	type roundResult struct {
		op               string
		p50, p99, max    time.Duration
		first            time.Duration
		cpu              float64 // the watchers' node's CPU seconds for the round
		lcpu             float64 // the leader's
		commit, reparked time.Duration
	}
	var results []roundResult
	for r := range rounds {
		c0, _ := cpuTicks(pid)
		l0, _ := cpuTicks(lpid)
		op := "take"
		path := "/v1/locks/try"
		body := `{"key":"watched/0","owner":"bench","ttl_ms":600000}`
		if r%2 == 1 {
			op, path, body = "release", "/v1/locks/release", `{"key":"watched/0","owner":"bench"}`
		}
		sent := time.Now()
		resp, err := ctl.Post(leader.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: HTTP %d", op, resp.StatusCode)
		}
		commit := time.Since(sent)
		lat := make([]time.Duration, 0, onKey0)
		timeout := time.After(60 * time.Second)
		for len(lat) < onKey0 {
			select {
			case a := <-answers:
				lat = append(lat, a.at.Sub(sent))
			case <-timeout:
				return fmt.Errorf("round %d: %d of %d watchers answered within 60s", r, len(lat), onKey0)
			}
		}
		if err := waitWatchers(ctl, n.base, watchers, time.Minute); err != nil {
			return err
		}
		reparked := time.Since(sent)
		c1, _ := cpuTicks(pid)
		l1, _ := cpuTicks(lpid)
		slices.Sort(lat)
		results = append(results, roundResult{op: op, first: lat[0], p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1],
			cpu: float64(c1-c0) / hz, lcpu: float64(l1-l0) / hz, commit: commit, reparked: reparked})
	}
	cancel()
	tr.CloseIdleConnections()

	fmt.Printf("\nnode CPU while idle, %v window: %.4f cores without watchers, %.4f cores with %d watchers parked\n", idle, base0, busy, watchers)
	fmt.Printf("\n%d watchers on the changed key; latency from sending the change to each watcher's answer:\n\n", onKey0)
	fmt.Println("| round | change | change answered | first | p50 | p99 | max | all re-parked | node CPU for the round | leader CPU (on a follower) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	for i, r := range results {
		lc := "—"
		if pid != lpid {
			lc = fmt.Sprintf("%.2f s", r.lcpu)
		}
		fmt.Printf("| %d | %s | %s | %s | %s | %s | %s | %s | %.2f s | %s |\n", i+1, r.op, ms(r.commit), ms(r.first), ms(r.p50), ms(r.p99), ms(r.max), ms(r.reparked), r.cpu, lc)
	}
	return nil
}
