package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFitCaps: caps that fit the fd limit stay; caps that do not are
// lowered so that they and the reserve fit, keeping the RESP:HTTP ratio,
// the peer port a floor, and per-address caps scaled below their port's.
func TestFitCaps(t *testing.T) {
	defaults := func(t *testing.T) parsedLimits {
		p, err := parseLimitArgs(t)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("unknown limit", func(t *testing.T) {
		p := defaults(t)
		if pl := fitCaps(&p, 0, 1); pl.Lowered || p.RESP.MaxConns != 10000 {
			t.Fatalf("changed caps with an unknown limit: %+v", pl)
		}
	})
	t.Run("fits", func(t *testing.T) {
		p := defaults(t)
		if pl := fitCaps(&p, 1<<20, 1); pl.Lowered || p.RESP.MaxConns != 10000 || p.HTTP.MaxConns != 10000 || p.PeerMaxConns != 1024 {
			t.Fatalf("lowered caps that fit: %+v", pl)
		}
	})
	for _, tc := range []struct {
		limit uint64
		nodes int
	}{{200, 1}, {1024, 1}, {4096, 1}, {16384, 1}, {4096, 3}, {100, 9}, {8, 1}} {
		t.Run(fmt.Sprintf("limit %d nodes %d", tc.limit, tc.nodes), func(t *testing.T) {
			p := defaults(t)
			pl := fitCaps(&p, tc.limit, tc.nodes)
			if !pl.Lowered {
				t.Fatalf("default caps (21,024 connections) not lowered for %d fds: %+v", tc.limit, pl)
			}
			total := uint64(p.RESP.MaxConns+p.HTTP.MaxConns+p.PeerMaxConns) + pl.Reserve
			if per := tc.limit / uint64(tc.nodes); total > per && per >= 2*(minPeerConns+2) {
				t.Fatalf("caps %d+%d+%d plus reserve %d = %d over the %d fds of a node", p.RESP.MaxConns, p.HTTP.MaxConns, p.PeerMaxConns, pl.Reserve, total, per)
			}
			if p.RESP.MaxConns < 1 || p.HTTP.MaxConns < 1 || p.PeerMaxConns < 1 {
				t.Fatalf("a cap at zero: %+v", pl)
			}
			if d := p.RESP.MaxConns - p.HTTP.MaxConns; d < -1 || d > 1 {
				t.Fatalf("equal RESP and HTTP caps split unevenly: %d, %d", p.RESP.MaxConns, p.HTTP.MaxConns)
			}
			if p.RESP.MaxConnsPerAddr > p.RESP.MaxConns || p.HTTP.MaxConnsPerAddr > p.HTTP.MaxConns || p.RESP.MaxConnsPerAddr < 1 {
				t.Fatalf("per-address caps %d, %d over their port's %d, %d", p.RESP.MaxConnsPerAddr, p.HTTP.MaxConnsPerAddr, p.RESP.MaxConns, p.HTTP.MaxConns)
			}
		})
	}
	t.Run("per-address none stays none", func(t *testing.T) {
		p, err := parseLimitArgs(t, "--resp-max-clients-per-addr", "0")
		if err != nil {
			t.Fatal(err)
		}
		fitCaps(&p, 1000, 1)
		if p.RESP.MaxConnsPerAddr >= 0 {
			t.Fatalf("no per-address cap became %d", p.RESP.MaxConnsPerAddr)
		}
	})
}

// skipOrFail skips, or fails under LOCKNODE_CI=1, a test that needs an
// outside program.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatalf("LOCKNODE_CI=1 but %s", why)
	}
	t.Skip(why)
}

// TestServeUnderLowFDLimit is the fd flood of the issue against a real
// `locknode serve` under `ulimit -n 200`: the node lowers its caps to fit
// and says so with the numbers; 300 RESP and 300 HTTP connections opened
// at once and closed leave it serving both ports and granting locks.
func TestServeUnderLowFDLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a node")
	}
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -n semantics checked on linux only")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		skipOrFail(t, "no sh to set ulimit -n")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "locknode")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built")
	httpAddr, respAddr := freeAddr(t), freeAddr(t)
	errPath := filepath.Join(dir, "stderr")
	errf, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd := exec.Command(sh, "-c", `ulimit -n 200 && exec "$0" "$@"`, bin, "serve",
		"--id", "n1", "--data", filepath.Join(dir, "data"), "--bootstrap",
		"--raft-addr", freeAddr(t), "--http-addr", httpAddr, "--resp-addr", respAddr, "--log-level", "warn")
	cmd.Stderr = errf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	// Ends when the process exits (killed by the cleanup below at the latest).
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	stderr := func() string { b, _ := os.ReadFile(errPath); return string(b) }
	alive := func() {
		t.Helper()
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("node exited (%v); stderr:\n%s", err, lastLines(stderr(), 30))
		default:
		}
	}
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: respAddr, Protocol: 2, MaxRetries: -1, PoolSize: 1})
	defer rc.Close()
	waitFor(t, 60*time.Second, "the node to grant a lock", func() (bool, string) {
		alive()
		ok, err := rc.SetNX(ctx, "before", "tok", time.Hour).Result()
		return ok && err == nil, fmt.Sprint(ok, err)
	})
	t.Logf("serving")
	warn := stderr()
	if !strings.Contains(warn, "connection caps lowered to fit the open-file limit") || !strings.Contains(warn, "fd_limit=200") {
		t.Fatalf("no WARN with the numbers about lowered caps; stderr:\n%s", lastLines(warn, 20))
	}

	// The flood: every connection held open at once, then all closed.
	var conns []net.Conn
	for i := 0; i < 600; i++ {
		addr := respAddr
		if i%2 == 1 {
			addr = httpAddr
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			continue // the accept queue may be full: that is the flood's point
		}
		conns = append(conns, c)
	}
	t.Logf("flood: %d of 600 connections opened", len(conns))
	for _, c := range conns {
		c.Close()
	}
	alive()

	waitFor(t, 30*time.Second, "RESP and HTTP to serve after the flood", func() (bool, string) {
		alive()
		ok, err := rc.SetNX(ctx, "after", "tok", time.Hour).Result()
		if err != nil || !ok {
			return false, fmt.Sprint("SET NX: ", ok, err)
		}
		hc := http.Client{Timeout: 5 * time.Second}
		resp, err := hc.Get("http://" + httpAddr + "/livez")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Sprint("/livez ", resp.StatusCode)
	})
	if s := stderr(); strings.Contains(s, "resp server stopped") || strings.Contains(s, "http server stopped") || strings.Contains(s, "listener stopped") {
		t.Fatalf("a listener stopped during the flood:\n%s", lastLines(s, 20))
	}
}
