package compat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// procCluster is n `locknode serve` processes of the current source:
// the first bootstraps, the others join it; every port is 127.0.0.1:0,
// read back from each node's first stdout line. A node is killed with
// SIGKILL, as a crashed machine.
type procCluster struct {
	t     *testing.T
	mu    sync.Mutex
	nodes []*procNode
}

type procNode struct {
	id, http, resp, raft string
	cmd                  *exec.Cmd
	exited               chan error // Wait's result, once
	stderr               string     // file holding the node's log
	dead                 bool
}

var serveLine = regexp.MustCompile(`^node (\S+) http=(\S+) resp=(\S+) raft=(\S+)$`)

// buildLocknode builds cmd/locknode once per test binary into a
// temporary directory that TestMain removes (without -race: the nodes are
// what is tested, the race detector would only slow them down).
func buildLocknode(t *testing.T) string {
	t.Helper()
	goBin := needProgram(t, "go")
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "locknode-compat-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "locknode")
		if out, err := exec.Command(goBin, "build", "-o", bin, "../cmd/locknode").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// startProcCluster starts n nodes with args added to each serve command
// line and waits for a leader every node knows.
func startProcCluster(t *testing.T, n int, args ...string) *procCluster {
	t.Helper()
	bin := buildLocknode(t)
	dir := t.TempDir()
	pc := &procCluster{t: t}
	t.Cleanup(func() {
		for i := range pc.nodes {
			pc.kill(i)
		}
		if t.Failed() {
			for _, nd := range pc.nodes {
				b, _ := os.ReadFile(nd.stderr)
				t.Logf("node %s log (tail):\n%s", nd.id, tail(string(b), 40))
			}
		}
	})
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		argv := []string{"serve", "--id", id, "--data", filepath.Join(dir, id),
			"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0",
			"--log-level", "info"}
		if i == 0 {
			argv = append(argv, "--bootstrap")
		} else {
			argv = append(argv, "--join", pc.nodes[0].raft)
		}
		pc.start(bin, id, dir, append(argv, args...))
	}
	pc.leader(60 * time.Second)
	return pc
}

func (pc *procCluster) start(bin, id, dir string, argv []string) {
	t := pc.t
	t.Helper()
	nd := &procNode{id: id, stderr: filepath.Join(dir, id+".log"), exited: make(chan error, 1)}
	errf, err := os.Create(nd.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	nd.cmd = exec.Command(bin, argv...)
	nd.cmd.Stderr = errf
	out, err := nd.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	pc.mu.Lock()
	pc.nodes = append(pc.nodes, nd)
	pc.mu.Unlock()
	first := make(chan string, 1)
	// Ends when the process exits (killed by the test or its cleanup):
	// its stdout reaches EOF.
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
		close(first)
		nd.exited <- nd.cmd.Wait()
	}()
	select {
	case l, ok := <-first:
		m := serveLine.FindStringSubmatch(l)
		if !ok || m == nil {
			b, _ := os.ReadFile(nd.stderr)
			t.Fatalf("%s: first line %q (exited: %v); log:\n%s", id, l, !ok, tail(string(b), 30))
		}
		nd.http, nd.resp, nd.raft = m[2], m[3], m[4]
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no node line within 60s", id)
	}
}

// kill sends SIGKILL to node i and waits for it to exit.
func (pc *procCluster) kill(i int) {
	pc.mu.Lock()
	nd := pc.nodes[i]
	dead := nd.dead
	nd.dead = true
	pc.mu.Unlock()
	if dead {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
}

// live reports whether node i has not been killed.
func (pc *procCluster) live(i int) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return !pc.nodes[i].dead
}

// resp lists every node's RESP address (killed ones included).
func (pc *procCluster) resp() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []string
	for _, nd := range pc.nodes {
		out = append(out, nd.resp)
	}
	return out
}

// leader waits until every live node names the same leader, and returns
// its index.
func (pc *procCluster) leader(timeout time.Duration) int {
	pc.t.Helper()
	idx := -1
	var why string
	deadline := time.Now().Add(timeout)
	for {
		idx, why = pc.agreedLeader()
		if idx >= 0 {
			return idx
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("no leader known to every live node after %v: %s", timeout, why)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
}

func (pc *procCluster) agreedLeader() (int, string) {
	pc.mu.Lock()
	nodes := append([]*procNode(nil), pc.nodes...)
	pc.mu.Unlock()
	leader := ""
	for _, nd := range nodes {
		if nd.dead {
			continue
		}
		st, err := nodeStatus(nd.http)
		if err != nil {
			return -1, nd.id + ": " + err.Error()
		}
		if st.Leader == "" || (leader != "" && st.Leader != leader) {
			return -1, fmt.Sprintf("%s names leader %q", nd.id, st.Leader)
		}
		leader = st.Leader
	}
	for i, nd := range nodes {
		if nd.id == leader && !nd.dead {
			return i, ""
		}
	}
	return -1, "the leader named is dead: " + leader
}

func nodeStatus(httpAddr string) (api.Status, error) {
	var st api.Status
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + httpAddr + "/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// retryFor calls fn until it returns nil or timeout passes, and returns
// its last error: what an application does around a lock call while the
// cluster elects a leader.
func retryFor(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond) // back-off between attempts
	}
}
