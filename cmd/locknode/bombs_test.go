package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
)

// addressSpaceKB is the `ulimit -v` every node of TestServeBombs runs
// under: the acceptance bound. A node that grew past it would die
// of "fatal error: out of memory".
const addressSpaceKB = 3000000

// bombNode is one `locknode serve` process under the address-space limit.
type bombNode struct {
	id, dir                  string
	raft, http, resp, stderr string
	cmd                      *exec.Cmd
	exited                   chan error
}

// freeAddr returns a loopback address with a port free a moment ago:
// nodes must keep their raft ports across the restart.
// freeAddr returns a loopback address for a node process to listen on
// later. The port is below Linux's ephemeral range (32768 and up): a port
// the kernel picked for 127.0.0.1:0 and freed can be taken meanwhile as
// the source port of any outgoing connection, and a node restarted on it
// then fails with "address already in use". Ports are not handed out
// twice by one test binary.
func freeAddr(t *testing.T) string {
	t.Helper()
	freeAddrMu.Lock()
	defer freeAddrMu.Unlock()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if freeAddrUsed[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		freeAddrUsed[port] = true
		return ln.Addr().String()
	}
	t.Fatal("no free port found below the ephemeral range")
	return ""
}

var (
	freeAddrMu   sync.Mutex
	freeAddrUsed = map[int]bool{}
)

func (n *bombNode) start(t *testing.T, bin, peers string) {
	t.Helper()
	// The child exec's itself under the limit; $0 is the binary.
	n.cmd = exec.Command("sh", "-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, addressSpaceKB), bin, "serve",
		"--id", n.id, "--data", n.dir, "--bootstrap", "--peers", peers,
		"--raft-addr", n.raft, "--http-addr", n.http, "--resp-addr", n.resp, "--log-level", "warn")
	errf, err := os.OpenFile(n.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	n.cmd.Stderr = errf
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.exited = make(chan error, 1)
	// Ends when the process exits (the test or its cleanup kills it).
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
		n.exited <- n.cmd.Wait()
	}()
}

func (n *bombNode) kill() {
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.exited
		n.cmd = nil
	}
}

// alive fails the test, with the node's stderr, if the process exited.
func (n *bombNode) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-n.exited:
		n.exited <- err
		b, _ := os.ReadFile(n.stderr)
		t.Fatalf("node %s exited (%v); stderr:\n%s", n.id, err, lastLines(string(b), 30))
	default:
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// TestServeBombs is the acceptance test: 3 `locknode serve`
// processes, each under `ulimit -v 3000000`, get the scripts that used to
// grow every node to gigabytes and a 400,000-command MULTI. Each answers
// its limit's error; the cluster keeps its leader (same term) and grants
// locks; killed and restarted, all three replay the log and serve.
func TestServeBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 3 processes")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set ulimit -v")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "locknode")
	// Without -race: the race runtime reserves far more address space
	// than the limit allows.
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	nodes := make([]*bombNode, 3)
	var peers []string
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		nodes[i] = &bombNode{id: id, dir: filepath.Join(dir, id), raft: freeAddr(t), http: freeAddr(t),
			resp: freeAddr(t), stderr: filepath.Join(dir, id+".stderr")}
		peers = append(peers, id+"="+nodes[i].raft)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.kill()
		}
	})
	startAll := func() {
		for _, n := range nodes {
			n.start(t, bin, strings.Join(peers, ","))
		}
	}
	leaderTerm := func(what string) uint64 {
		var term uint64
		waitFor(t, 60*time.Second, what, func() (bool, string) {
			var leaders []string
			for _, n := range nodes {
				n.alive(t)
				st, err := status(n.http)
				if err != nil {
					return false, err.Error()
				}
				leaders = append(leaders, st.Leader)
				term = st.Term
			}
			ok := leaders[0] != "" && leaders[0] == leaders[1] && leaders[1] == leaders[2]
			return ok, fmt.Sprint(leaders)
		})
		return term
	}
	t.Logf("built")
	startAll()
	term := leaderTerm("a leader known to all three")
	t.Logf("cluster up, term %d", term)
	// The limit is in force (sh exec'd the node, so the pid is the node's).
	for _, n := range nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", n.cmd.Process.Pid))
		if err != nil {
			t.Logf("cannot check the address-space limit: %v", err)
			break
		}
		if want := fmt.Sprint(addressSpaceKB * 1024); !strings.Contains(string(b), want) {
			t.Fatalf("node %s runs without ulimit -v %d:\n%s", n.id, addressSpaceKB, b)
		}
	}

	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: nodes[0].resp, Protocol: 2, MaxRetries: -1,
		ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second})
	defer c.Close()
	if err := c.SetNX(ctx, "held", "tok", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, script, want string }{
		{"2000 x 1 MiB into a table", `local s=string.rep('x',1000000) local t={} for i=1,2000 do t[i]=s..i end return #t`, "ERR locknode: script memory limit exceeded"},
		{"doubling", `local s='x' while true do s=s..s end`, "ERR locknode: script memory limit exceeded"},
		{"table.concat of 300 x 1 MiB", `local s=string.rep('x',1048576) local t={} for i=1,300 do t[i]=s end return #table.concat(t)`, "ERR locknode: script memory limit exceeded"},
		{"spin", `while true do end`, "ERR locknode: script exceeded"},
	} {
		err := c.Eval(ctx, tc.script, nil).Err()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Fatalf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// 400,000 commands in one MULTI, sent while the replies are read (a
	// client that only writes would fill the socket buffers both ways):
	// refused past the bound, then EXECABORT.
	t.Logf("scripts answered; sending the 400k MULTI")
	execReply := bigMulti(t, nodes[0].resp, 400_000)
	if !strings.HasPrefix(execReply, "-EXECABORT") {
		t.Fatalf("400k MULTI: EXEC answered %q", execReply)
	}
	if n, err := c.Exists(ctx, "m").Result(); err != nil || n != 0 {
		t.Fatalf("part of the aborted MULTI applied: %d, %v", n, err)
	}
	for _, n := range nodes {
		n.alive(t)
	}
	// Still serving, with the same leader term: no step-down.
	if ok, err := c.SetNX(ctx, "after", "tok2", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("lock after the bombs: %v, %v", ok, err)
	}
	if got := leaderTerm("the leader after the bombs"); got != term {
		t.Errorf("term %d -> %d: the leader lost its quorum contact", term, got)
	}

	t.Logf("serving after the bombs; restarting")
	// Kill all three and restart: every node replays the entries (the
	// bombs included) and serves.
	for _, n := range nodes {
		n.kill()
	}
	startAll()
	leaderTerm("a leader after the restart")
	c2 := redis.NewClient(&redis.Options{Addr: nodes[2].resp, Protocol: 2, MaxRetries: -1})
	defer c2.Close()
	waitFor(t, 30*time.Second, "the locks back after the restart", func() (bool, string) {
		v1, err1 := c2.Get(ctx, "held").Result()
		v2, err2 := c2.Get(ctx, "after").Result()
		return v1 == "tok" && v2 == "tok2", fmt.Sprint(v1, err1, v2, err2)
	})
	if ok, err := c2.SetNX(ctx, "third", "tok3", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("lock after the restart: %v, %v", ok, err)
	}
	if err := c2.Eval(ctx, `local s='x' while true do s=s..s end`, nil).Err(); err == nil ||
		!strings.HasPrefix(err.Error(), "ERR locknode: script memory limit exceeded") {
		t.Fatalf("bomb after the restart: %v", err)
	}
	for _, n := range nodes {
		n.alive(t)
	}
}

// status reads a node's /v1/status, or an error while it is not up or
// knows no leader.
func status(httpAddr string) (api.Status, error) {
	var st api.Status
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + httpAddr + "/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, err
	}
	if st.Leader == "" {
		return st, errors.New("no leader known")
	}
	return st, nil
}

// bigMulti sends MULTI, n SETs and EXEC on one connection while reading
// the replies, and returns EXEC's reply line.
func bigMulti(t *testing.T, addr string, n int) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(120 * time.Second))
	written := make(chan error, 1)
	// Ends when everything is written or the connection fails.
	go func() {
		w := bufio.NewWriterSize(nc, 64<<10)
		w.WriteString("*1\r\n$5\r\nMULTI\r\n")
		for i := 0; i < n; i++ {
			v := fmt.Sprint(i)
			fmt.Fprintf(w, "*3\r\n$3\r\nSET\r\n$1\r\nm\r\n$%d\r\n%s\r\n", len(v), v)
		}
		w.WriteString("*1\r\n$4\r\nEXEC\r\n")
		written <- w.Flush()
	}()
	r := bufio.NewReader(nc)
	refused := 0
	for i := 0; i < n+2; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		switch {
		case i == 0 && line != "+OK\r\n":
			t.Fatalf("MULTI: %q", line)
		case i == n+1:
			if err := <-written; err != nil {
				t.Fatal(err)
			}
			if refused == 0 {
				t.Fatalf("no command refused while queueing")
			}
			return strings.TrimSpace(line)
		case strings.HasPrefix(line, "-ERR a MULTI block holds at most"):
			refused++
		case i > 0 && line != "+QUEUED\r\n":
			t.Fatalf("reply %d: %q", i, line)
		}
	}
	return ""
}
