package testcluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// ProcCluster is a cluster of real `locknode serve` processes on
// loopback: faults are the operating system's — kill -9, SIGSTOP /
// SIGCONT (a true stop of the world: raft timers freeze too) and
// restart from the data directory. Check it through HTTP clients.
type ProcCluster struct {
	t    testing.TB
	bin  string
	tlog *testLog

	ids, dirs        []string
	raft, http, resp []string
	mu               sync.Mutex
	cmds             []*exec.Cmd
	stopped          []bool
	waits            []chan struct{} // closed when the process exits
	bins             []string        // the binary each node runs (SetBinary)
	joined           []bool          // added by AddNode: starts with --join, not --bootstrap

	// Args are extra `serve` flags for every node started from now on
	// (--cluster-upgrade manual, say).
	Args []string
}

// BuildLocknode builds cmd/locknode into t.TempDir() and returns its
// path.
func BuildLocknode(t testing.TB) string {
	t.Helper()
	return BuildLocknodeTags(t, "")
}

// BuildLocknodeTags is BuildLocknode with build tags (go build -tags):
// "locknode_next" is the synthetic next release of the upgrade tests.
func BuildLocknodeTags(t testing.TB, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "locknode")
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, "github.com/locknode/locknode/cmd/locknode")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testcluster: go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port that was free a moment
// ago (the process binds it itself, so a small race remains).
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// NewProcCluster starts n `locknode serve` processes of binary bin
// bootstrapped together, with the extra serve flags args (p.Args), and
// waits until they answer; cleanup kills them.
func NewProcCluster(t testing.TB, bin string, n int, args ...string) *ProcCluster {
	t.Helper()
	p := &ProcCluster{t: t, bin: bin, tlog: &testLog{t: t}, Args: args}
	t.Cleanup(p.tlog.stop)
	var peers []string
	for i := range n {
		p.ids = append(p.ids, nodeID(i))
		p.dirs = append(p.dirs, t.TempDir())
		p.raft = append(p.raft, freeAddr(t))
		p.http = append(p.http, freeAddr(t))
		p.resp = append(p.resp, freeAddr(t))
		peers = append(peers, nodeID(i)+"="+p.raft[i])
	}
	p.cmds = make([]*exec.Cmd, n)
	p.stopped = make([]bool, n)
	p.waits = make([]chan struct{}, n)
	p.bins = make([]string, n)
	p.joined = make([]bool, n)
	for i := range p.bins {
		p.bins[i] = bin
	}
	t.Cleanup(p.shutdown)
	for i := range n {
		if err := p.start(i, strings.Join(peers, ",")); err != nil {
			t.Fatalf("testcluster: start %s: %v", nodeID(i), err)
		}
	}
	return p
}

func (p *ProcCluster) peers() string {
	var out []string
	for i, id := range p.ids {
		out = append(out, id+"="+p.raft[i])
	}
	return strings.Join(out, ",")
}

func (p *ProcCluster) start(i int, peers string) error {
	level := os.Getenv("LOCKNODE_TEST_LOG")
	if level == "" {
		level = "warn"
	}
	args := []string{"serve", "--id", p.ids[i], "--data", p.dirs[i],
		"--raft-addr", p.raft[i], "--http-addr", p.http[i], "--resp-addr", p.resp[i], "--log-level", level}
	p.mu.Lock()
	bin, joined := p.bins[i], p.joined[i]
	args = append(args, p.Args...)
	p.mu.Unlock()
	if joined {
		var others []string
		for j, a := range p.raft {
			if j != i {
				others = append(others, a)
			}
		}
		args = append(args, "--join", strings.Join(others, ","), "--join-timeout", "20s")
	} else {
		args = append(args, "--bootstrap", "--peers", peers)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = p.tlog
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	done := make(chan struct{})
	// Ends when the process closes its stdout (it exits).
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if !sent && strings.HasPrefix(sc.Text(), "node "+p.ids[i]+" ") {
				ready <- nil
				sent = true
			}
		}
		if !sent {
			ready <- fmt.Errorf("exited before it was ready")
		}
	}()
	// Ends when the process exits.
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmds[i], p.waits[i], p.stopped[i] = cmd, done, false
	p.mu.Unlock()
	select {
	case err := <-ready:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("not ready after 30s")
	}
}

// signal sends sig to node i's process, if it runs.
func (p *ProcCluster) signal(i int, sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmds[i]
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Kill kills node i with SIGKILL and waits for it to exit.
func (p *ProcCluster) Kill(i int) {
	p.signal(i, syscall.SIGCONT)
	p.signal(i, syscall.SIGKILL)
	p.mu.Lock()
	done := p.waits[i]
	p.cmds[i] = nil
	p.stopped[i] = false
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Stop freezes node i (SIGSTOP); Cont resumes it (SIGCONT).
func (p *ProcCluster) Stop(i int) {
	p.signal(i, syscall.SIGSTOP)
	p.mu.Lock()
	p.stopped[i] = true
	p.mu.Unlock()
}

func (p *ProcCluster) Cont(i int) {
	p.signal(i, syscall.SIGCONT)
	p.mu.Lock()
	p.stopped[i] = false
	p.mu.Unlock()
}

// SetBinary makes node i run bin from its next (re)start: a rolling
// upgrade or rollback replaces a killed node's binary this way.
func (p *ProcCluster) SetBinary(i int, bin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bins[i] = bin
}

// AddNode starts a new node running bin that joins the cluster through
// the others (serve --join) and returns its index, or the error of a
// node that exited before it was ready (a refused join, say).
func (p *ProcCluster) AddNode(bin string) (int, error) {
	p.t.Helper()
	p.mu.Lock()
	i := len(p.ids)
	p.ids = append(p.ids, nodeID(i))
	p.dirs = append(p.dirs, p.t.TempDir())
	p.raft = append(p.raft, freeAddr(p.t))
	p.http = append(p.http, freeAddr(p.t))
	p.resp = append(p.resp, freeAddr(p.t))
	p.cmds = append(p.cmds, nil)
	p.stopped = append(p.stopped, false)
	p.waits = append(p.waits, nil)
	p.bins = append(p.bins, bin)
	p.joined = append(p.joined, true)
	p.mu.Unlock()
	return i, p.start(i, "")
}

// Running reports whether node i's process runs.
func (p *ProcCluster) Running(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmds[i] != nil
}

// Restart starts killed node i again from its data directory.
func (p *ProcCluster) Restart(i int) {
	p.t.Helper()
	if err := p.start(i, p.peers()); err != nil {
		p.t.Fatalf("testcluster: restart %s: %v", nodeID(i), err)
	}
}

func (p *ProcCluster) shutdown() {
	for i := range p.ids {
		p.Kill(i)
	}
}

// N is the number of nodes.
func (p *ProcCluster) N() int { return len(p.ids) }

// Endpoints are the nodes' HTTP base URLs.
func (p *ProcCluster) Endpoints() []string {
	var out []string
	for _, a := range p.http {
		out = append(out, "http://"+a)
	}
	return out
}

// RESPAddr is node i's RESP address.
func (p *ProcCluster) RESPAddr(i int) string { return p.resp[i] }

// Locker is an HTTP client of node i only (no fail-over).
func (p *ProcCluster) Locker(i int) api.Locker {
	cl, err := client.New(client.Config{Endpoints: p.Endpoints()[i : i+1], RequestTimeout: 2 * time.Second,
		Retry: client.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		p.t.Fatalf("testcluster: %v", err)
	}
	return cl
}

// HTTPClient records operations through a fail-over client of every node.
func (p *ProcCluster) HTTPClient(h *History, id int) *Client {
	cl, err := client.New(client.Config{Endpoints: p.Endpoints(), RequestTimeout: 3 * time.Second,
		Retry: client.RetryPolicy{MaxAttempts: 6, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
	if err != nil {
		p.t.Fatalf("testcluster: %v", err)
	}
	return NewClient(h, id, "http", cl)
}

// WaitLeader waits until a running node reports itself leader (through
// GET /v1/status) and returns its index.
func (p *ProcCluster) WaitLeader(ctx context.Context) (int, error) {
	return waitFor(ctx, 20*time.Millisecond, func() (int, bool) {
		for i := range p.ids {
			p.mu.Lock()
			up := p.cmds[i] != nil && !p.stopped[i]
			p.mu.Unlock()
			if !up {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := p.Locker(i).Status(sctx)
			cancel()
			if err == nil && st.Leader == p.ids[i] && st.State == "leader" {
				return i, true
			}
		}
		return -1, false
	})
}
