package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// `lock --wait W` gives its verdict within about W, whatever the cluster
// does, and says what happened: the lock is busy (and who holds it), the
// cluster has no leader, or no node answered.
func TestLockWaitIsHonoured(t *testing.T) {
	fake := httpapitest.NewFake()
	t.Cleanup(func() { fake.Close() })
	held := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "worker-1", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	hang := httpapitest.NewServer(t, fake)
	hang.SetMode(httpapitest.Hang)
	noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"no_leader","message":"no leader reachable: node n1 (candidate) has had no leader for 3s: the cluster has no quorum or this node is cut off from it; a leader needs 2 of the 3 voters running and reaching each other"}` + "\n"))
	}))
	t.Cleanup(noLeader.Close)

	const wait = time.Second
	for _, c := range []struct {
		name     string
		endpoint string
		code     int
		want     []string
	}{
		{"held", held.URL, exitLockBusy, []string{"job is busy", "waited 1s", "held by worker-1"}},
		{"no leader", noLeader.URL, exitLockFailed, []string{"no leader: node n1 (candidate)", "2 of the 3 voters"}},
		{"no answer", hang.URL, exitLockFailed, []string{"waited 1s", "no node answered"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb syncBuffer
			start := time.Now()
			code := runLock(context.Background(), []string{"job", "--endpoints", c.endpoint, "--wait", wait.String(), "--", "true"}, &out, &errb)
			took := time.Since(start)
			if code != c.code {
				t.Fatalf("code %d, want %d; stderr %s", code, c.code, errb.String())
			}
			if took > wait+1500*time.Millisecond {
				t.Errorf("--wait %v took %v", wait, took)
			}
			line := errb.String()
			rest := line
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q lacks %q (in order %q)", line, w, c.want)
				}
				rest = rest[i+len(w):]
			}
			if m := internalText.FindString(line); m != "" {
				t.Errorf("%q shows an internal name (%q)", line, m)
			}
		})
	}
}
