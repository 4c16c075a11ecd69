package testcluster

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// GET /readyz on every node: 200 while it serves, 503 with the reason on
// a follower cut off from the leader, 200 again after the heal. /livez
// answers throughout.
func TestReadyz(t *testing.T) {
	c := New(t, 3, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(i int, path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HTTPAddr(i)+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitCode := func(i int, path string, want int) string {
		t.Helper()
		var code int
		var body string
		for code != want {
			if ctx.Err() != nil {
				t.Fatalf("node %d %s: %d %q, want %d", i, path, code, body, want)
			}
			code, body = get(i, path)
			if code != want {
				time.Sleep(20 * time.Millisecond)
			}
		}
		return body
	}
	l, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.N(); i++ {
		waitCode(i, "/readyz", http.StatusOK)
	}
	f := (l + 1) % c.N()
	c.Isolate(f)
	body := waitCode(f, "/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "not ready") {
		t.Fatalf("503 body %q does not say why", body)
	}
	if code, _ := get(f, "/livez"); code != http.StatusOK {
		t.Fatalf("isolated node's /livez: %d", code)
	}
	c.Heal()
	waitCode(f, "/readyz", http.StatusOK)
}
