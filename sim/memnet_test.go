package sim

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/testcluster"
)

// TestNetwork checks the in-memory network keeps TCP's promises in a
// bubble: bytes in order after the latency, EOF after the peer's close,
// a write to a closed peer fails, a dial to no listener is refused, and a
// read deadline passes on virtual time.
func TestNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		n.MinLatency, n.MaxLatency = time.Millisecond, 5*time.Millisecond
		ln, err := n.Listen()
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if _, err := n.Dial(context.Background(), "10.0.0.1:1"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to nothing: %v, want ECONNREFUSED", err)
		}
		c, err := n.Dial(context.Background(), ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, p := range []string{"a", "bc", "def"} {
			if _, err := c.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "abcdef" {
			t.Fatalf("read %q, %v; want abcdef, nil", got, err)
		}
		if d := time.Since(start); d < time.Millisecond || d > 5*time.Millisecond {
			t.Errorf("delivered after %v, want within the latency 1ms..5ms", d)
		}
		if _, err := s.Write([]byte("x")); err == nil {
			t.Error("write to a closed peer succeeded")
		}
		c2, _ := n.Dial(context.Background(), ln.Addr().String())
		s2, _ := ln.Accept()
		defer c2.Close()
		defer s2.Close()
		_ = s2.SetReadDeadline(time.Now().Add(time.Second))
		at := time.Now()
		if _, err := s2.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}
		if d := time.Since(at); d != time.Second {
			t.Errorf("deadline passed after %v, want 1s of virtual time", d)
		}
	})
}

// TestIdleMinute runs a 3-node cluster idle for a simulated minute: it
// keeps one leader, every goroutine ends with the bubble, and it costs a
// fraction of the minute (logged: the simulator's floor).
func TestIdleMinute(t *testing.T) {
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		c := testcluster.New(t, 3, testcluster.Options{Network: NewNetwork(1), LogLevel: "off"})
		first := c.LeaderIndex()
		time.Sleep(time.Minute)
		if l := c.LeaderIndex(); l < 0 || l != first {
			t.Errorf("leader %d after an idle minute, was %d", l, first)
		}
	})
	t.Logf("a simulated idle minute in %v", time.Since(wall))
}
