package redisbridge

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/internal/netguard"
	"github.com/locknode/locknode/internal/netguard/netguardtest"
)

// TestServeSurvivesEMFILE: while accept fails with EMFILE the RESP port
// keeps its listener (ListenerErr says accepts fail); once descriptors
// free up, a client that connected meanwhile is served.
func TestServeSurvivesEMFILE(t *testing.T) {
	fl := netguardtest.New(listenLocal(t))
	fl.Fail.Store(true)
	s := testServerOnListener(t, newFakeBackend(t), Config{}, fl)
	eventually(t, 10*time.Second, "failed accepts", func() bool { return fl.Fails() >= 3 })
	if err := s.ListenerErr(); !errors.Is(err, netguard.ErrAcceptFailing) {
		t.Fatalf("ListenerErr while out of fds = %v, want ErrAcceptFailing", err)
	}
	c := dialRaw(t, s) // waits in the accept queue
	fl.Fail.Store(false)
	if v := c.do("PING"); v.Str != "PONG" {
		t.Fatalf("PING after the fault: %v", v)
	}
	if err := s.ListenerErr(); err != nil {
		t.Fatalf("ListenerErr after recovery = %v", err)
	}
}

// TestListenerErrWhenStopped: a listener closed underneath the server
// ends Serve, and ListenerErr reports it until Close.
func TestListenerErrWhenStopped(t *testing.T) {
	ln := listenLocal(t)
	s, err := New(newFakeBackend(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	served := make(chan error, 1)
	// Ends when the listener is closed below.
	go func() { served <- s.Serve(ln) }()
	eventually(t, 5*time.Second, "Serve to register", func() bool { return s.Addr() == ln.Addr().String() })
	if err := s.ListenerErr(); err != nil {
		t.Fatalf("ListenerErr while serving = %v", err)
	}
	ln.Close()
	if err := <-served; err == nil {
		t.Fatal("Serve returned nil after its listener was closed underneath")
	}
	if err := s.ListenerErr(); !errors.Is(err, netguard.ErrStopped) {
		t.Fatalf("ListenerErr = %v, want ErrStopped", err)
	}
	s.Close()
	if err := s.ListenerErr(); err != nil {
		t.Fatalf("ListenerErr after Close = %v", err)
	}
}

// TestMaxClientsPerAddr: the connection past MaxConnsPerAddr from one
// address is refused with a clear error and closed; the others work, and
// a slot freed is taken again.
func TestMaxClientsPerAddr(t *testing.T) {
	s, _ := testServer(t, Config{MaxConnsPerAddr: 2})
	a, b := dialRaw(t, s), dialRaw(t, s)
	for _, c := range []*rawConn{a, b} {
		if v := c.do("PING"); v.Str != "PONG" {
			t.Fatalf("PING: %v", v)
		}
	}
	third := dialRaw(t, s)
	if got := third.readRaw(10 * time.Second); got != "-"+msgMaxClientsAddr+"\r\n" {
		t.Fatalf("third connection got %q, want %q and close", got, msgMaxClientsAddr)
	}
	a.nc.Close()
	eventually(t, 10*time.Second, "a freed slot to be taken", func() bool {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			return false
		}
		defer nc.Close()
		c := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
		c.send(cmdBytes("PING"))
		return strings.Contains(c.readRaw(time.Second), "PONG")
	})
}

// TestAuthTimeout: with a password, a connection that does not
// authenticate within AuthTimeout is closed; one that did stays open
// past it.
func TestAuthTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, _ := testServer(t, Config{Password: "pw", AuthTimeout: timeout})
	idle := dialRaw(t, s)
	authed := dialRaw(t, s)
	if v := authed.do("AUTH", "pw"); v.Str != "OK" {
		t.Fatalf("AUTH: %v", v)
	}
	start := time.Now()
	idle.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := idle.br.ReadByte(); err != io.EOF {
		t.Fatalf("unauthenticated connection: read %v, want EOF (closed by the server)", err)
	}
	if waited := time.Since(start); waited < timeout/2 {
		t.Fatalf("closed after %v, before the auth timeout %v", waited, timeout)
	}
	time.Sleep(timeout) // past the timeout: the authenticated one must still be open
	if v := authed.do("PING"); v.Str != "PONG" {
		t.Fatalf("authenticated connection after the auth timeout: %v", v)
	}
}

// TestAuthFailuresThrottled: from the third failed AUTH on a connection
// the answer waits, the wait doubling up to the cap; the tenth failure
// disconnects. A second connection from the same address is delayed from
// its first failure (the address's count), a successful AUTH still works
// and forgets the address, and a delayed answer holds back no other
// connection.
func TestAuthFailuresThrottled(t *testing.T) {
	const delay, maxDelay = 20 * time.Millisecond, 80 * time.Millisecond
	th := auth.NewThrottle(auth.ThrottleConfig{Delay: delay, MaxDelay: maxDelay})
	s, _ := testServer(t, Config{Password: "pw", AuthThrottle: th})
	c := dialRaw(t, s)
	for i := 1; i <= 10; i++ {
		start := time.Now()
		v := c.do("AUTH", "wrong")
		took := time.Since(start)
		if v.Type != '-' || !strings.HasPrefix(v.Str, "WRONGPASS") {
			t.Fatalf("failure %d: %v", i, v)
		}
		want := time.Duration(0)
		if i >= 3 {
			want = min(delay<<(i-3), maxDelay)
		}
		if took < want {
			t.Fatalf("failure %d answered after %v, want at least %v", i, took, want)
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the 10th failure: read %v, want EOF (disconnected)", err)
	}

	// The address has failed 10 times: a new connection's first failure waits.
	c2 := dialRaw(t, s)
	start := time.Now()
	if v := c2.do("AUTH", "wrong"); !strings.HasPrefix(v.Str, "WRONGPASS") {
		t.Fatalf("new connection's failure: %v", v)
	}
	if took := time.Since(start); took < maxDelay {
		t.Fatalf("new connection's first failure answered after %v; the address's count should delay it %v", took, maxDelay)
	}
	if v := c2.do("AUTH", "pw"); v.Str != "OK" {
		t.Fatalf("AUTH with the right password after failures: %v", v)
	}
	if v := c2.do("PING"); v.Str != "PONG" {
		t.Fatalf("PING after AUTH: %v", v)
	}
	if n := th.Addrs(); n != 0 {
		t.Fatalf("the address is still remembered after a success (%d addresses)", n)
	}
}

// TestAuthDelayHoldsNoOne: while one connection's failed AUTH waits its
// delay, another connection is served.
func TestAuthDelayHoldsNoOne(t *testing.T) {
	th := auth.NewThrottle(auth.ThrottleConfig{FreeCount: -1, Delay: 5 * time.Second, MaxDelay: 5 * time.Second})
	s, _ := testServer(t, Config{Password: "pw", AuthThrottle: th})
	slow, other := dialRaw(t, s), dialRaw(t, s)
	if v := other.do("AUTH", "pw"); v.Str != "OK" {
		t.Fatalf("AUTH: %v", v)
	}
	slow.send(cmdBytes("AUTH", "wrong")) // its answer waits 5 s
	eventually(t, 10*time.Second, "the failure to be counted", func() bool { return th.Addrs() == 1 })
	if v := other.do("PING"); v.Str != "PONG" {
		t.Fatalf("PING on another connection: %v", v)
	}
	slow.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
	if _, err := slow.br.Peek(1); err == nil {
		t.Fatal("the delayed answer came before the other connection's PING")
	}
	if v := slow.read(); !strings.HasPrefix(v.Str, "WRONGPASS") {
		t.Fatalf("delayed answer: %v", v)
	}
}
