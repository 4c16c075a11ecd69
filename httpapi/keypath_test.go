package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// TestKeysInPaths: inspect and history find a key with slashes whether
// its slashes come raw or as %2F, a trailing raw /history asks the
// history, and a raw path that clients rewrite is refused instead of
// being redirected to another key.
func TestKeysInPaths(t *testing.T) {
	reg := prometheus.NewRegistry()
	ns := startNodeServer(t, httpapi.Config{Registerer: reg})
	ctx := context.Background()
	keys := []string{"a/b", "a/b/history", "history", "x%2Fy", "ключ/é", "a//b", "../x", ".", "..", "a/./b", "a/"}
	for _, k := range keys {
		if _, err := ns.node.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatalf("%q: %v", k, err)
		}
	}
	for _, c := range []struct {
		path    string // after /v1/locks/
		key     string // "": refused with 400
		history bool
	}{
		{"a/b", "a/b", false},
		{"a%2Fb", "a/b", false},
		{"a/b/history", "a/b", true},
		{"a%2Fb/history", "a/b", true},
		{"a%2Fb/%68istory", "a/b", true},
		{"a/b%2Fhistory", "a/b/history", false},
		{"a%2Fb%2Fhistory", "a/b/history", false},
		{"a%2Fb%2Fhistory/history", "a/b/history", true},
		{"history", "history", false},
		{"history/history", "history", true},
		{"x%252Fy", "x%2Fy", false},
		{"x%252Fy/history", "x%2Fy", true},
		{"%D0%BA%D0%BB%D1%8E%D1%87/%C3%A9", "ключ/é", false},
		{"%D0%BA%D0%BB%D1%8E%D1%87%2F%C3%A9/history", "ключ/é", true},
		{"a%2F%2Fb", "a//b", false},
		{"..%2Fx", "../x", false},
		{"%2E", ".", false},
		{"%2E%2E/history", "..", true},
		{"a/%2E/b", "a/./b", false},
		{"a%2F", "a/", false},
		{"a//b", "", false},
		{"a/./b", "", false},
		{"../x", "", false},
		{"a/../b", "", false},
		{"a/", "", false},
		{"a/b/", "", false},
		{"a//history", "", false},
	} {
		path := wire.PathLockPrefix + c.path
		if c.key == "" {
			st, raw := ns.get(t, "", "", path, nil)
			if st != http.StatusBadRequest || !strings.Contains(raw, "%2F") {
				t.Errorf("GET %s: %d %s, want 400 naming %%2F", path, st, raw)
			}
			continue
		}
		if c.history {
			var h api.History
			if st, raw := ns.get(t, "", "", path, &h); st != 200 || h.Key != c.key || len(h.Entries) != 1 || h.Entries[0].Owner != "o" {
				t.Errorf("GET %s: %d %s, want the history of %q", path, st, raw, c.key)
			}
			continue
		}
		var li api.LockInfo
		if st, raw := ns.get(t, "", "", path, &li); st != 200 || li.Key != c.key || len(li.Holders) != 1 {
			t.Errorf("GET %s: %d %s, want lock %q", path, st, raw, c.key)
		}
	}
	// Metrics count a history of a key with slashes under its route.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "locknode_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var route, code string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "route":
					route = lp.GetValue()
				case "code":
					code = lp.GetValue()
				}
			}
			counts[route+" "+code] += m.GetCounter().GetValue()
		}
	}
	if n := counts["GET /v1/locks/{key}/history 200"]; n != 8 {
		t.Errorf("history requests counted under the history route: %v, want 8 (all: %v)", n, counts)
	}
}
