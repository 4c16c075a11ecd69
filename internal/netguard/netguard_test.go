package netguard

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/locknode/locknode/internal/netguard/netguardtest"
)

func listen(t *testing.T) *netguardtest.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return netguardtest.New(ln)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestListenerSurvivesEMFILE: while accept fails with EMFILE, Accept
// keeps retrying (Err says so); once accepts work again it returns the
// waiting connection and Err is nil.
func TestListenerSurvivesEMFILE(t *testing.T) {
	fl := listen(t)
	fl.Fail.Store(true)
	l := Listen(fl, "test", nil)
	got := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	// Ends when Accept returns (a connection below, or Close at cleanup).
	go func() {
		c, err := l.Accept()
		if err != nil {
			errc <- err
			return
		}
		got <- c
	}()
	waitFor(t, "several failed accepts", func() bool { return fl.Fails() >= 3 })
	if err := l.Err(); !errors.Is(err, ErrAcceptFailing) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Err while failing = %v, want ErrAcceptFailing wrapping EMFILE", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("Accept returned %v while accepts failed", err)
	default:
	}
	c, err := net.Dial("tcp", fl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fl.Fail.Store(false)
	select {
	case sc := <-got:
		sc.Close()
	case err := <-errc:
		t.Fatalf("Accept: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted after the fault ended")
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err after recovery = %v", err)
	}
	if l.Failures() < 3 {
		t.Fatalf("Failures = %d", l.Failures())
	}
}

// TestListenerCloseEndsBackoff: Close ends an Accept waiting out its
// backoff at once, with net.ErrClosed, and Err stays nil.
func TestListenerCloseEndsBackoff(t *testing.T) {
	fl := listen(t)
	fl.Fail.Store(true)
	l := Listen(fl, "test", nil)
	errc := make(chan error, 1)
	// Ends when Accept returns (Close below).
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	waitFor(t, "a failed accept", func() bool { return fl.Fails() >= 1 })
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept kept waiting after Close")
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err after Close = %v, want nil", err)
	}
}

// TestListenerClosedUnderneath: a listener closed by someone else ends
// Accept, and Err reports ErrStopped.
func TestListenerClosedUnderneath(t *testing.T) {
	fl := listen(t)
	l := Listen(fl, "test", nil)
	fl.Listener.Close()
	if _, err := l.Accept(); err == nil {
		t.Fatal("Accept on a closed listener succeeded")
	}
	if err := l.Err(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Err = %v, want ErrStopped", err)
	}
}

func TestAddrLimiter(t *testing.T) {
	a := NewAddrLimiter(2)
	x1 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}
	x2 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2}
	x3 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 3}
	y := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1}
	r1, ok1 := a.Acquire(x1)
	_, ok2 := a.Acquire(x2)
	if !ok1 || !ok2 {
		t.Fatal("the first two connections of an IP refused")
	}
	if _, ok := a.Acquire(x3); ok {
		t.Fatal("a third connection from the same IP (another port) admitted")
	}
	if _, ok := a.Acquire(y); !ok {
		t.Fatal("another IP refused")
	}
	r1()
	r1() // a second release gives back nothing more
	if _, ok := a.Acquire(x3); !ok {
		t.Fatal("refused after a release")
	}
	if _, ok := a.Acquire(x1); ok {
		t.Fatal("a double release freed two slots")
	}
	if _, ok := (*AddrLimiter)(nil).Acquire(x1); !ok {
		t.Fatal("nil limiter refused")
	}
}

func TestRateLog(t *testing.T) {
	r := RateLog{Every: time.Hour}
	if ok, _ := r.Allow(); !ok {
		t.Fatal("first line held back")
	}
	for range 3 {
		if ok, _ := r.Allow(); ok {
			t.Fatal("a line within Every let through")
		}
	}
	r.last.Store(0) // as if Every had passed
	if ok, n := r.Allow(); !ok || n != 3 {
		t.Fatalf("Allow after Every = %v, %d held back; want true, 3", ok, n)
	}
}

// TestListenerFailingExpires: once accepts stop failing, Err clears
// within the window even if no client connects (accept then blocks
// without an error).
func TestListenerFailingExpires(t *testing.T) {
	fl := listen(t)
	fl.Fail.Store(true)
	l := Listen(fl, "test", nil)
	l.failWindow = 50 * time.Millisecond
	// Ends when Close (below) ends Accept.
	go l.Accept()
	defer l.Close()
	waitFor(t, "a failed accept", func() bool { return fl.Fails() >= 1 })
	fl.Fail.Store(false) // the next retry blocks in accept: no client waits
	waitFor(t, "Err to clear without a connection", func() bool { return l.Err() == nil })
}
