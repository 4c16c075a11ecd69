package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/netguard"
)

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyz is one GET /readyz: status and body.
func readyz(t *testing.T, httpAddr string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitReadyz(t *testing.T, httpAddr string, want int, what string) string {
	t.Helper()
	var body string
	waitFor(t, 20*time.Second, what, func() (bool, string) {
		var code int
		code, body = readyz(t, httpAddr)
		return code == want, body
	})
	return body
}

// A node process whose RESP listener stopped accepting answers /readyz
// 503 naming the listener, though the node itself is fine.
func TestReadyzListenerStopped(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.Bootstrap = "n1", t.TempDir(), true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{
		Cluster: cfg, HTTPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitReadyz(t, p.HTTPAddr(), http.StatusOK, "ready")

	respAddr := p.RESPAddr()
	// The accept loop returns as on an accept error it does not retry.
	p.respLn.Close()
	body := waitReadyz(t, p.HTTPAddr(), http.StatusServiceUnavailable, "503 after the RESP listener died")
	if !strings.Contains(body, "resp: "+respAddr+": listener stopped accepting connections") {
		t.Fatalf("503 body %q does not name the RESP listener", body)
	}
	if strings.Contains(body, "cluster:") {
		t.Fatalf("503 body %q blames the node, which is fine", body)
	}
}

// The readiness of a process is every check's: the reason names each
// failing one, and a check that passes again makes it ready again.
func TestReadinessChecks(t *testing.T) {
	var r readiness
	var aDown, bDown atomic.Bool
	errA, errB := errors.New("a is down"), errors.New("b is down")
	r.add("a", func(context.Context) error {
		if aDown.Load() {
			return errA
		}
		return nil
	})
	r.add("b", func(context.Context) error {
		if bDown.Load() {
			return errB
		}
		return nil
	})
	ctx := context.Background()
	if err := r.ready(ctx); err != nil {
		t.Fatal(err)
	}
	bDown.Store(true)
	if err := r.ready(ctx); err == nil || err.Error() != "b: b is down" || !errors.Is(err, errB) {
		t.Fatalf("one down: %v", err)
	}
	aDown.Store(true)
	if err := r.ready(ctx); err == nil || err.Error() != "a: a is down; b: b is down" || !errors.Is(err, errA) {
		t.Fatalf("both down: %v", err)
	}
	aDown.Store(false)
	bDown.Store(false)
	if err := r.ready(ctx); err != nil {
		t.Fatalf("healed: %v", err)
	}

	var l listenerState
	l.addr = "127.0.0.1:6379"
	if err := l.check(ctx); err != nil {
		t.Fatal(err)
	}
	l.stop(errors.New("accept: too many open files"))
	if err := l.check(ctx); !errors.Is(err, errListenerStopped) || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("stopped listener: %v", err)
	}
}

// TestListenerErr: a node's ListenerErr is nil while its three ports
// accept, and names the RESP port once its listener is closed underneath
// (the hook readiness reports "listener down" with).
func TestListenerErr(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.BindAddr, cfg.Bootstrap = "n1", t.TempDir(), "127.0.0.1:0", true
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, Config{Cluster: cfg, HTTPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ListenerErr(); err != nil {
		t.Fatalf("ListenerErr of a serving node = %v", err)
	}
	p.respLn.Close()
	waitFor(t, 10*time.Second, "the RESP listener reported down", func() (bool, string) {
		err := p.ListenerErr()
		return errors.Is(err, netguard.ErrStopped) && strings.HasPrefix(err.Error(), "resp:"), fmt.Sprint(err)
	})
}

func TestAdvertiseAddr(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	cases := []struct {
		name, explicit, bound, host, want string
	}{
		{"bound", "", "127.0.0.1:6379", "10.0.0.1", "127.0.0.1:6379"},
		{"explicit wins", "db.example:6379", "0.0.0.0:6379", "10.0.0.1", "db.example:6379"},
		{"wildcard takes raft host", "", "0.0.0.0:6379", "10.0.0.1", "10.0.0.1:6379"},
		{"ipv6 wildcard", "", "[::]:6379", "fd00::1", "[fd00::1]:6379"},
		{"wildcard, no host known", "", "0.0.0.0:6379", "", "0.0.0.0:6379"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := advertiseAddr(c.explicit, tcp(c.bound), c.host); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
