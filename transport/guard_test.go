package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/locknode/locknode/internal/netguard"
	"github.com/locknode/locknode/internal/netguard/netguardtest"
)

// TestPeerPortSurvivesEMFILE: while accept fails with EMFILE the peer
// port keeps its listener (ListenerErr says accepts fail); a call made
// meanwhile is answered once descriptors free up, and Close still ends
// the accept loop at once.
func TestPeerPortSurvivesEMFILE(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := netguardtest.New(ln)
	fl.Fail.Store(true)
	srv := newTransport(t, func(c *Config) { c.Listener = fl })
	srv.Serve(echo)
	cli := newTransport(t, nil)
	waitFor(t, 10*time.Second, "failed accepts", func() bool { return fl.Fails() >= 3 })
	if err := srv.ListenerErr(); !errors.Is(err, netguard.ErrAcceptFailing) {
		t.Fatalf("ListenerErr while out of fds = %v, want ErrAcceptFailing", err)
	}
	done := make(chan error, 1)
	// Ends when the call returns (answered, or its 30 s deadline).
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := cli.Call(ctx, srv.Addr().String(), []byte("x"))
		if err == nil && string(got) != "echo:x" {
			err = errors.New("wrong answer " + string(got))
		}
		done <- err
	}()
	fl.Fail.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("call after the fault: %v", err)
	}
	if err := srv.ListenerErr(); err != nil {
		t.Fatalf("ListenerErr after recovery = %v", err)
	}
	fl.Fail.Store(true)
	// The loop waits in an accept begun before the fault: a connection
	// ends it, and the next accept fails.
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitFor(t, 10*time.Second, "failing again", func() bool { return srv.ListenerErr() != nil })
	closed := make(chan struct{})
	// Ends when Close returns.
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited on the accept loop's backoff")
	}
}
