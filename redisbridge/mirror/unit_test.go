package mirror

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMirrorConfigValidate(t *testing.T) {
	base := func() Config { c := DefaultConfig(); c.URL = "redis://127.0.0.1:6379/0"; return c }
	for _, tc := range []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"defaults with a URL", func(*Config) {}, true},
		{"zero numbers take defaults", func(c *Config) { c.BatchSize, c.QueueSize, c.OpTimeout = 0, 0, 0 }, true},
		{"Redis options", func(c *Config) { c.URL = ""; c.Redis = &redis.Options{Addr: "h:1"} }, true},
		{"Sentinel options", func(c *Config) {
			c.URL = ""
			c.Sentinel = &redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"h:26379"}}
		}, true},
		{"sentinel URL", func(c *Config) { c.URL = "redis://h:26379/0?master_name=m" }, true},
		{"no redis", func(c *Config) { c.URL = "" }, false},
		{"two redis", func(c *Config) { c.Redis = &redis.Options{Addr: "h:1"} }, false},
		{"bad scheme", func(c *Config) { c.URL = "http://h:1" }, false},
		{"bad db", func(c *Config) { c.URL = "redis://h:1/x" }, false},
		{"unknown URL option", func(c *Config) { c.URL = "redis://h:1?bogus=1" }, false},
		{"empty Redis.Addr", func(c *Config) { c.URL = ""; c.Redis = &redis.Options{} }, false},
		{"Sentinel without master", func(c *Config) {
			c.URL = ""
			c.Sentinel = &redis.FailoverOptions{SentinelAddrs: []string{"h:26379"}}
		}, false},
		{"negative batch", func(c *Config) { c.BatchSize = -1 }, false},
		{"queue below batch", func(c *Config) { c.BatchSize, c.QueueSize = 100, 10 }, false},
		{"backoff inverted", func(c *Config) { c.MinBackoff, c.MaxBackoff = time.Second, time.Millisecond }, false},
		{"negative check interval", func(c *Config) { c.CheckInterval = -1 }, false},
		{"braces in prefix", func(c *Config) { c.KeyPrefix = "{x}" }, false},
		{"verify disabled", func(c *Config) { c.VerifyInterval = -1 }, true},
		{"TLS with a URL", func(c *Config) { c.TLS = &tls.Config{} }, true},
		{"TLS with Redis options", func(c *Config) {
			c.URL = ""
			c.Redis = &redis.Options{Addr: "h:1"}
			c.TLS = &tls.Config{}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
}

func TestParseMirrorURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		ok      bool
		check   func(Config) bool
		comment string
	}{
		{"redis://127.0.0.1:6379", true, func(c Config) bool {
			return c.URL == "redis://127.0.0.1:6379" && c.BatchSize == 256 && c.KeyPrefix == ""
		}, "defaults"},
		{"redis://:pw@h:1/2?key_prefix=ln:&filter=job:&batch_size=10&queue_size=100&verify_interval=5s&dial_timeout=1s", true,
			func(c Config) bool {
				o, _, err := parseRedisURL(c.URL)
				return err == nil && c.KeyPrefix == "ln:" && c.Filter == "job:" && c.BatchSize == 10 &&
					c.QueueSize == 100 && c.VerifyInterval == 5*time.Second && o.Password == "pw" && o.DB == 2 &&
					o.DialTimeout == time.Second
			}, "mirror options are taken out, go-redis ones kept"},
		{"rediss://h:1?verify_interval=-1s", true, func(c Config) bool {
			o, _, _ := parseRedisURL(c.URL)
			return c.VerifyInterval < 0 && o.TLSConfig != nil
		}, "TLS, verify off"},
		{"redis://h:1?batch_size=0", false, nil, "zero batch"},
		{"redis://h:1?batch_size=x", false, nil, "bad batch"},
		{"redis://h:1?verify_interval=soon", false, nil, "bad duration"},
		{"redis://h:1?key_prefix=%7Bx%7D", false, nil, "braces"},
		{"redis://h:1?batch_size=100&queue_size=10", false, nil, "queue below batch"},
		{"ftp://h:1", false, nil, "scheme"},
		{"::", false, nil, "not a URL"},
	} {
		t.Run(tc.comment, func(t *testing.T) {
			c, err := ParseURL(tc.url)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
			}
			if err == nil && !tc.check(c) {
				t.Errorf("ParseURL(%q) = %+v", tc.url, c)
			}
		})
	}
}

func TestMirrorQueue(t *testing.T) {
	q := newMirrorQueue(6)
	now := time.Now()
	q.start(10)
	q.push(9, []string{"old"}, now) // covered by the start index
	q.push(11, []string{"a", "b"}, now)
	q.push(12, nil, now) // no mirrored key: only seen moves
	q.push(13, []string{"b", "c"}, now)
	q.push(14, nil, now)
	if b := q.peek(10, 2); b.upto != 11 || len(b.keys) != 2 {
		t.Fatalf("peek(10, 2) = %+v, want entry 11 alone", b)
	}
	if b := q.peek(10, 100); b.upto != 14 || len(b.keys) != 3 || len(b.stamps) != 2 {
		t.Fatalf("peek(10, 100) = %+v, want up to seen 14 with a, b, c", b)
	}
	q.trim(11)
	if b := q.peek(11, 100); b.upto != 14 || len(b.keys) != 2 {
		t.Fatalf("after trim(11) peek = %+v", b)
	}
	q.push(15, []string{"d", "e", "f", "g", "h"}, now) // 2 + 5 > 6
	seen, cover, n, _ := q.marks()
	if q.overflows() != 1 || n != 0 || cover != 15 || seen != 15 {
		t.Fatalf("after overflow: seen=%d cover=%d keys=%d overflows=%d", seen, cover, n, q.overflows())
	}
}

// TestMirrorScriptOrdering drives the batch script directly: a replayed
// batch is a no-op, a batch after a gap is refused, a missing index is
// reported, and a resync step of a superseded generation writes nothing.
func TestMirrorScriptOrdering(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	ctx := context.Background()
	rd := &mirrorRedis{c: c, timeout: time.Second}
	held := func(key, owner string) lockState {
		return lockState{key: key, held: true, holders: []string{owner}, mode: "exclusive", fence: 7, px: 60_000, deadline: 1}
	}
	run := func(mode, gen string, base, upto uint64, ops ...lockState) scriptResult {
		t.Helper()
		res, err := rd.run(ctx, mode, gen, base, upto, ops)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		return res
	}
	if res := run("batch", "", 0, 5, held("k", "a")); res.status != "missing" {
		t.Fatalf("batch on an empty Redis: %+v, want missing", res)
	}
	if v, _ := c.Exists(ctx, "k").Result(); v != 0 {
		t.Fatalf("a refused batch wrote")
	}
	run("begin", "g1", 0, 0)
	if res := run("resync", "g1", 0, 0, held("k", "a")); res.status != "ok" {
		t.Fatalf("resync step: %+v", res)
	}
	if res := run("finish", "g1", 0, 10); res.status != "ok" || res.stored != 10 {
		t.Fatalf("finish: %+v", res)
	}
	if res := run("batch", "", 10, 12, held("k", "b")); res.status != "ok" || res.stored != 12 {
		t.Fatalf("batch (10,12]: %+v", res)
	}
	// Replay of the same batch, and of an older one: no-ops.
	for _, b := range [][2]uint64{{10, 12}, {8, 11}} {
		if res := run("batch", "", b[0], b[1], held("k", "stale")); res.status != "replay" || res.stored != 12 {
			t.Fatalf("replay (%d,%d]: %+v", b[0], b[1], res)
		}
	}
	if v, _ := c.Get(ctx, "k").Result(); v != "b" {
		t.Fatalf("replays changed k to %q", v)
	}
	// Overlapping batch (base below the index, upto above): applied.
	if res := run("batch", "", 11, 13, held("k", "c")); res.status != "ok" {
		t.Fatalf("overlap: %+v", res)
	}
	// A gap: the stream would continue from 20 but Redis is at 13.
	if res := run("batch", "", 20, 21, held("k", "gap")); res.status != "gap" || res.stored != 13 {
		t.Fatalf("gap: %+v", res)
	}
	// Two resyncs interleaved: the first one's steps are refused once the
	// second began, and only the second sets the index.
	run("begin", "old", 0, 0)
	run("begin", "new", 0, 0)
	if res := run("resync", "old", 0, 0, held("k", "old")); res.status != "superseded" {
		t.Fatalf("superseded step: %+v", res)
	}
	if res := run("finish", "old", 0, 99); res.status != "superseded" {
		t.Fatalf("superseded finish: %+v", res)
	}
	if v, _ := c.Get(ctx, "k").Result(); v != "c" {
		t.Fatalf("a superseded resync wrote k = %q", v)
	}
	if _, ok, _ := rd.readIndex(ctx); ok {
		t.Fatalf("index present during a resync")
	}
	// A foreign value of the wrong type at the state key reads as
	// missing and a resync repairs it.
	c.Del(ctx, rd.stateKey())
	c.Set(ctx, rd.stateKey(), "junk", 0)
	if _, ok, err := rd.readIndex(ctx); ok || err != nil {
		t.Fatalf("readIndex over a foreign string: ok=%v err=%v", ok, err)
	}
	run("begin", "g2", 0, 0)
	if res := run("finish", "g2", 0, 30); res.status != "ok" {
		t.Fatalf("finish after repair: %+v", res)
	}
}

func TestGlobEscape(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a*b?[c]\\": `a\*b\?\[c\]\\`, "": ""} {
		if got := globEscape(in); got != want {
			t.Errorf("globEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMirrorable(t *testing.T) {
	for _, tc := range []struct {
		filter, key string
		want        bool
	}{
		{"", "lock:a", true},
		{"job:", "lock:a", false},
		{"job:", "job:1", true},
		{"", "{x}:meta", false},
		{"", mirrorStateKey, false},
		{"", "{x}", true},
	} {
		if got := mirrorable(tc.filter, tc.key); got != tc.want {
			t.Errorf("mirrorable(%q, %q) = %v, want %v", tc.filter, tc.key, got, tc.want)
		}
	}
}

// Config.TLS turns TLS on for a URL of either scheme and keeps the
// URL's host as the name to verify.
func TestMirrorClientTLS(t *testing.T) {
	roots := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, u := range []string{"redis://cache.example:6380/0", "rediss://cache.example:6380/0"} {
		c := DefaultConfig()
		c.URL, c.TLS = u, roots
		rc, err := c.client()
		if err != nil {
			t.Fatal(err)
		}
		o := rc.Options()
		rc.Close()
		if o.TLSConfig == nil || o.TLSConfig.ServerName != "cache.example" || o.TLSConfig == roots {
			t.Fatalf("%s: TLSConfig %+v", u, o.TLSConfig)
		}
	}
}
