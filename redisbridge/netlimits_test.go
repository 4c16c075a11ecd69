package redisbridge

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientInfo parses CLIENT INFO's reply into its fields.
func clientInfo(t *testing.T, c *rawConn) map[string]string {
	t.Helper()
	v := c.do("CLIENT", "INFO")
	if v.Type != '$' {
		t.Fatalf("CLIENT INFO: %v", v)
	}
	out := map[string]string{}
	for _, f := range strings.Fields(v.Str) {
		k, val, _ := strings.Cut(f, "=")
		out[k] = val
	}
	return out
}

func infoInt(t *testing.T, info map[string]string, k string) int {
	t.Helper()
	n, err := strconv.Atoi(info[k])
	if err != nil {
		t.Fatalf("CLIENT INFO %s=%q", k, info[k])
	}
	return n
}

// TestBuffersShrinkAfterLargeCommand: a connection that sent one 45 MB
// command holds a normal connection's buffers again once it waits for
// its next command (CLIENT INFO's argv-mem); within a pipeline it keeps
// them, which shows argv-mem measures them.
func TestBuffersShrinkAfterLargeCommand(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	base := clientInfo(t, c)
	part := strings.Repeat("x", 15<<20)
	large := cmdBytes("XLARGE", part, part, part) // 45 MiB in three arguments

	// Pipelined: CLIENT INFO runs while the large command's buffers are held.
	c.send(large + cmdBytes("CLIENT", "INFO"))
	if v := c.read(); v.Type != '-' || !strings.HasPrefix(v.Str, "ERR unknown command") {
		t.Fatalf("large command: %.100v", v)
	}
	v := c.read()
	fields := map[string]string{}
	for _, f := range strings.Fields(v.Str) {
		k, val, _ := strings.Cut(f, "=")
		fields[k] = val
	}
	if n := infoInt(t, fields, "argv-mem"); n < 45<<20 {
		t.Fatalf("argv-mem %d within the pipeline, want the large command's buffers (>= 45 MiB)", n)
	}

	// Then the connection waits for its next command: back to normal.
	after := clientInfo(t, c)
	for _, k := range []string{"argv-mem", "tot-mem"} {
		if got, was := infoInt(t, after, k), infoInt(t, base, k); got > was+64<<10 {
			t.Errorf("%s = %d after the large command, %d before", k, got, was)
		}
	}
	if v := c.do("PING"); v.Str != "PONG" {
		t.Fatalf("PING: %v", v)
	}
}

// TestSlowSubscriberDoesNotHoldBackOthers: a subscriber that does not
// read is disconnected once its pending output passes the pub/sub limit
// (hard at once, soft after PubSubSoftFor), while a subscriber that reads
// gets every message and PUBLISH never waits.
func TestSlowSubscriberDoesNotHoldBackOthers(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"hard limit", Config{PubSubHardLimit: 1 << 20, PubSubSoftLimit: -1}},
		{"soft limit", Config{PubSubHardLimit: -1, PubSubSoftLimit: 256 << 10, PubSubSoftFor: 200 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.WriteTimeout = time.Minute // only the output limit may drop the slow one
			s, _ := testServer(t, tc.cfg)
			slow := dialRaw(t, s)
			slow.do("SUBSCRIBE", "flood")

			fast := goRedis(t, s, 3)
			ctx := context.Background()
			ps := fast.Subscribe(ctx, "flood")
			t.Cleanup(func() { ps.Close() })
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			subscribers := func() int {
				s.hub.mu.RLock()
				defer s.hub.mu.RUnlock()
				return len(s.hub.channels["flood"])
			}
			eventually(t, 5*time.Second, "two subscribers", func() bool { return subscribers() == 2 })
			var (
				mu       sync.Mutex
				received int
				bad      string
			)
			ch := ps.Channel()
			// Ends when ps is closed (cleanup) and ch with it.
			go func() {
				for m := range ch {
					mu.Lock()
					if bad == "" && !strings.HasPrefix(m.Payload, fmt.Sprint(received, "m")) {
						bad = fmt.Sprintf("message %d: %.20q", received, m.Payload)
					}
					received++
					mu.Unlock()
				}
			}()

			pub := goRedis(t, s, 3)
			msg := strings.Repeat("m", 64<<10)
			sent := 0
			deadline := time.Now().Add(30 * time.Second)
			for subscribers() == 2 {
				if time.Now().After(deadline) {
					t.Fatalf("the slow subscriber is still connected after %d messages (%d MiB)", sent, sent*len(msg)>>20)
				}
				// The fast subscriber is kept within two messages of the
				// publisher, under either limit, so that only the slow one
				// can reach it even when the reader is starved of CPU.
				eventually(t, 30*time.Second, "the fast subscriber to keep up", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return received >= sent-2
				})
				start := time.Now()
				if err := pub.Publish(ctx, "flood", fmt.Sprint(sent, msg)).Err(); err != nil {
					t.Fatalf("publish: %v", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Fatalf("PUBLISH took %v behind a slow subscriber", d)
				}
				sent++
			}
			t.Logf("slow subscriber dropped after %d messages", sent)
			// The fast subscriber gets every message, in order.
			eventually(t, 30*time.Second, "the fast subscriber to get every message", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return received >= sent
			})
			mu.Lock()
			if bad != "" || received != sent {
				t.Fatalf("fast subscriber: %d of %d messages; %s", received, sent, bad)
			}
			mu.Unlock()
			if v := pub.Ping(ctx).Val(); v != "PONG" {
				t.Fatalf("PING after: %q", v)
			}

		})
	}
}
