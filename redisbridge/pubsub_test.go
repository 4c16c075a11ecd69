package redisbridge

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "abc", true},
		{"a*", "abc", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{"redisson_lock__channel:{*}", "redisson_lock__channel:{l1}", true},
		{"lock-channel:*", "lock-channel:x:y", true},
		{"*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestPubSub: go-redis subscribers (channel and pattern, RESP2 and RESP3)
// receive what another client PUBLISHes, and what a script publishes.
func TestPubSub(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+itoa(proto), func(t *testing.T) {
			s, _ := testServer(t, Config{})
			ctx := context.Background()
			sub := goRedis(t, s, proto)
			pub := goRedis(t, s, proto)
			ps := sub.Subscribe(ctx, "redisson_lock__channel:{l1}")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil { // the subscribe confirmation
				t.Fatalf("subscribe: %v", err)
			}
			if err := ps.PSubscribe(ctx, "lock-channel:*"); err != nil {
				t.Fatal(err)
			}
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatalf("psubscribe: %v", err)
			}
			n, err := pub.Publish(ctx, "redisson_lock__channel:{l1}", "0").Result()
			if err != nil || n != 1 {
				t.Fatalf("publish = %d, %v; want 1 local receiver", n, err)
			}
			expectMessage(t, ps, "", "redisson_lock__channel:{l1}", "0")
			// A script publishes like Redisson's unlock script does.
			if err := pub.Eval(ctx, `redis.call(ARGV[2], KEYS[1], ARGV[1]); return 1`, []string{"lock-channel:abc"}, "1", "publish").Err(); err != nil {
				t.Fatalf("eval publish: %v", err)
			}
			expectMessage(t, ps, "lock-channel:*", "lock-channel:abc", "1")
			// PING on a subscribed connection.
			if err := ps.Ping(ctx, "hb"); err != nil {
				t.Fatalf("ping in subscribe mode: %v", err)
			}
			msg, err := ps.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := msg.(*redis.Pong); !ok || p.Payload != "hb" {
				t.Fatalf("ping reply %#v", msg)
			}
			if err := ps.Unsubscribe(ctx, "redisson_lock__channel:{l1}"); err != nil {
				t.Fatal(err)
			}
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if n, _ := pub.Publish(ctx, "redisson_lock__channel:{l1}", "x").Result(); n != 0 {
				t.Fatalf("publish after unsubscribe reached %d", n)
			}
		})
	}
}

func expectMessage(t *testing.T, ps *redis.PubSub, pattern, channel, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if msg.Pattern != pattern || msg.Channel != channel || msg.Payload != payload {
		t.Fatalf("got %+v, want pattern %q channel %q payload %q", msg, pattern, channel, payload)
	}
}

// TestPubSubOrder: a message published before the subscriber's next
// command is written before that command's reply, and many messages
// arrive in publish order.
func TestPubSubOrder(t *testing.T) {
	s, _ := testServer(t, Config{})
	rc := dialRaw(t, s)
	rc.do("HELLO", "3")
	if v := rc.do("SUBSCRIBE", "ch"); v.Type != '>' {
		t.Fatalf("subscribe reply %v", v)
	}
	pub := dialRaw(t, s)
	for i := 0; i < 50; i++ {
		pub.do("PUBLISH", "ch", itoa(i))
	}
	// In RESP3 other commands work while subscribed; the 50 messages were
	// queued before this GET ran, so they precede its reply.
	rc.send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	for i := 0; i < 50; i++ {
		v := rc.read()
		if v.Type != '>' || len(v.Elems) != 3 || v.Elems[2].Str != itoa(i) {
			t.Fatalf("message %d: %v", i, v)
		}
	}
	if v := rc.read(); !v.Null {
		t.Fatalf("GET reply %v, want null", v)
	}
}

// TestSlowSubscriberDisconnected: a subscriber that does not read is
// dropped after MaxPendingPushes, and publishing never blocks.
func TestSlowSubscriberDisconnected(t *testing.T) {
	s, _ := testServer(t, Config{MaxPendingPushes: 10, WriteTimeout: 50 * time.Millisecond})
	rc := dialRaw(t, s)
	rc.do("SUBSCRIBE", "flood")
	pub := goRedis(t, s, 3)
	big := string(make([]byte, 64<<10))
	ctx := context.Background()
	done := make(chan struct{})
	// Ends after its publishes; each returns although nobody reads.
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			if err := pub.Publish(ctx, "flood", big).Err(); err != nil {
				t.Errorf("publish: %v", err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("PUBLISH blocked behind a slow subscriber")
	}
	eventually(t, 5*time.Second, "slow subscriber to be dropped", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) == 1 // only go-redis' publisher connection remains
	})
}
