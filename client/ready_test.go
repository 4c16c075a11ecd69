package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Ready asks once: nil on 200, ErrNotReady with the node's reasons on
// 503, and neither for another answer.
func TestReady(t *testing.T) {
	var calls atomic.Int32
	answer := atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		switch answer.Load() {
		case 0:
			_, _ = w.Write([]byte("ok\n"))
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: cluster: not ready: no leader known\n"))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("boom"))
		}
	}))
	defer srv.Close()
	c, err := New(Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	answer.Store(1)
	err = c.Ready(ctx)
	if !errors.Is(err, ErrNotReady) || !strings.HasSuffix(err.Error(), ": cluster: not ready: no leader known") {
		t.Fatalf("not ready: %v", err)
	}
	answer.Store(2)
	if err := c.Ready(ctx); err == nil || errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("500: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls for 3 probes: Ready must not retry", n)
	}
}
