package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

func TestConfigValidate(t *testing.T) {
	ok := func(c *Config) {}
	cases := []struct {
		name  string
		tweak func(*Config)
		bad   bool
	}{
		{"defaults", ok, false},
		{"no id", func(c *Config) { c.ID = "" }, true},
		{"no data dir", func(c *Config) { c.DataDir = "" }, true},
		{"lease above heartbeat", func(c *Config) { c.LeaderLeaseTimeout = time.Second }, true},
		{"election below heartbeat", func(c *Config) { c.ElectionTimeout = 100 * time.Millisecond }, true},
		{"too many entries", func(c *Config) { c.MaxAppendEntries = 5000 }, true},
		{"tick gap above interval", func(c *Config) { c.MinTickGap = time.Second }, true},
		{"peers without self", func(c *Config) { c.Bootstrap = true; c.Peers = []Peer{{ID: "x", Addr: "h:1"}} }, true},
		{"duplicate peer", func(c *Config) {
			c.Bootstrap = true
			c.Peers = []Peer{{ID: "n", Addr: "h:1"}, {ID: "n", Addr: "h:2"}}
		}, true},
		{"bootstrap and join", func(c *Config) { c.Bootstrap = true; c.Join = []string{"h:1"} }, true},
		{"bad fsm limits", func(c *Config) { c.FSM.MinTTL = -1 }, true},
		{"bootstrap with self", func(c *Config) { c.Bootstrap = true; c.Peers = []Peer{{ID: "n", Addr: "h:1"}} }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{ID: "n", DataDir: "/tmp/x"}
			c.tweak(&cfg)
			err := cfg.Validate()
			if (err != nil) != c.bad {
				t.Fatalf("Validate() = %v, want bad=%v", err, c.bad)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
		})
	}
}

// Bad input through the embedded API is refused early and changes
// nothing.
func TestBadRequests(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[0]
	ctx := ctxT(t, 10*time.Second)
	before := n.AppliedIndex()
	for _, req := range []api.AcquireRequest{
		{Owner: "o", TTLMs: 1},
		{Key: "k", TTLMs: 1},
		{Key: "k", Owner: "o"},
		{Key: "k", Owner: "o", TTLMs: -1},
		{Key: "k", Owner: "o", TTLMs: 1, Mode: "bogus"},
		{Key: "k", Owner: "o", TTLMs: 1, WaitMs: -1},
		{Keys: []string{"a", ""}, Owner: "o", TTLMs: 1},
	} {
		if _, err := n.TryAcquire(ctx, req); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", req, err)
		}
	}
	long := make([]byte, 600)
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: string(long), Owner: "o", TTLMs: 1}); !errors.Is(err, api.ErrLimit) {
		t.Errorf("long key: %v", err)
	}
	// A TTL over the FSM's maximum: refused by the same limits.
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1 << 50}); !errors.Is(err, api.ErrLimit) {
		t.Errorf("huge ttl: %v", err)
	}
	if n.AppliedIndex() != before {
		t.Errorf("bad requests reached the log")
	}
}
