package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/cluster"
)

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
	p, err := startProc(ctx, procConfig{
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

func TestReadyFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		entries uint64
		lag     time.Duration
	}{
		{"defaults", nil, false, cluster.DefaultReadyMaxLagEntries, cluster.DefaultReadyMaxLag},
		{"set", []string{"--ready-max-lag-entries", "100", "--ready-max-lag", "3s"}, false, 100, 3 * time.Second},
		{"zero entries", []string{"--ready-max-lag-entries", "0"}, true, 0, 0},
		{"negative entries", []string{"--ready-max-lag-entries", "-1"}, true, 0, 0},
		{"lag not a duration", []string{"--ready-max-lag", "soon"}, true, 0, 0},
		{"lag too short", []string{"--ready-max-lag", "1ms"}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			r := addReadyFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c := cluster.DefaultConfig()
			err := r.apply(&c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (c.ReadyMaxLagEntries != tt.entries || c.ReadyMaxLag != tt.lag) {
				t.Fatalf("got %d entries, %v", c.ReadyMaxLagEntries, c.ReadyMaxLag)
			}
		})
	}
	// serve refuses a bad value from the environment, before starting.
	t.Setenv("LOCKNODE_READY_MAX_LAG", "never")
	if code := run([]string{"serve", "--id", "a", "--data", t.TempDir()}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("LOCKNODE_READY_MAX_LAG=never: exit %d, want 2", code)
	}
}
