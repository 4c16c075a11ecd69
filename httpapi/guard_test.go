package httpapi_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/internal/netguard"
	"github.com/locknode/locknode/internal/netguard/netguardtest"
	"github.com/locknode/locknode/wire"
)

// guardedServer serves l as cmd/locknode does, on ln, and returns the
// wrapped listener.
func guardedServer(t *testing.T, l api.Locker, cfg httpapi.Config, ln net.Listener) *httpapi.LimitedListener {
	t.Helper()
	srv := httpapi.NewServer(httpapi.New(l, cfg), cfg)
	lim := httpapi.LimitListener(ln, cfg)
	done := make(chan struct{})
	// Ends when Close (in cleanup) closes the listener.
	go func() {
		defer close(done)
		if err := srv.Serve(lim); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return lim
}

func localListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHTTPSurvivesEMFILE: while accept fails with EMFILE, http.Server
// keeps serving the port (Err says accepts fail); a client that
// connected meanwhile is answered once descriptors free up.
func TestHTTPSurvivesEMFILE(t *testing.T) {
	fl := netguardtest.New(localListener(t))
	fl.Fail.Store(true)
	lim := guardedServer(t, httpapitest.NewFake(), httpapi.Config{}, fl)
	waitUntil(t, "failed accepts", func() bool { return fl.Fails() >= 3 })
	if err := lim.Err(); !errors.Is(err, netguard.ErrAcceptFailing) {
		t.Fatalf("Err while out of fds = %v, want ErrAcceptFailing", err)
	}
	c := dialHTTP(t, fl.Addr().String())
	io.WriteString(c.nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	fl.Fail.Store(false)
	if st, eb := c.answer(t, 10*time.Second); st != 200 {
		t.Fatalf("after the fault: %d %+v", st, eb)
	}
	if err := lim.Err(); err != nil {
		t.Fatalf("Err after recovery = %v", err)
	}
}

// TestHTTPMaxConnsPerAddr: the connection past MaxConnsPerAddr from one
// address is answered 503 too_many_connections, saying so, and closed.
func TestHTTPMaxConnsPerAddr(t *testing.T) {
	ln := localListener(t)
	guardedServer(t, httpapitest.NewFake(), httpapi.Config{MaxConnsPerAddr: 2}, ln)
	addr := ln.Addr().String()
	for range 2 { // two held open, each accepted (answered)
		c := dialHTTP(t, addr)
		io.WriteString(c.nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		if st, eb := c.answer(t, 10*time.Second); st != 200 {
			t.Fatalf("%d %+v", st, eb)
		}
	}
	c := dialHTTP(t, addr)
	st, eb := c.answer(t, 10*time.Second)
	if st != http.StatusServiceUnavailable || eb.Code != wire.CodeTooManyConns || !strings.Contains(eb.Message, "2 open from this address") {
		t.Fatalf("third connection: %d %+v, want 503 %s from this address", st, eb, wire.CodeTooManyConns)
	}
	if !c.closed(t, 10*time.Second) {
		t.Fatal("refused connection left open")
	}
}

// TestBasicAuthFailuresThrottled: from the third wrong Basic credential
// on a connection the 401 waits, doubling up to the cap; the tenth says
// Connection: close and the server closes; right credentials still work.
func TestBasicAuthFailuresThrottled(t *testing.T) {
	us, err := auth.Parse(strings.NewReader(testUsers))
	if err != nil {
		t.Fatal(err)
	}
	const delay, maxDelay = 20 * time.Millisecond, 80 * time.Millisecond
	th := auth.NewThrottle(auth.ThrottleConfig{Delay: delay, MaxDelay: maxDelay})
	ln := localListener(t)
	guardedServer(t, httpapitest.NewFake(), httpapi.Config{Users: auth.NewStoreFrom(us, nil), AuthThrottle: th}, ln)
	req := func(user, pass string) string {
		cred := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		return "GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + cred + "\r\n\r\n"
	}
	c := dialHTTP(t, ln.Addr().String())
	for i := 1; i <= 10; i++ {
		start := time.Now()
		io.WriteString(c.nc, req("r", "wrong"))
		c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("failure %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d", i, resp.StatusCode)
		}
		want := time.Duration(0)
		if i >= 3 {
			want = min(delay<<(i-3), maxDelay)
		}
		if took < want {
			t.Fatalf("failure %d answered after %v, want at least %v", i, took, want)
		}
		if last := i == 10; resp.Close != last {
			t.Fatalf("failure %d: Connection: close is %v", i, resp.Close)
		}
	}
	if !c.closed(t, 10*time.Second) {
		t.Fatal("connection left open after the 10th failure")
	}
	ok := dialHTTP(t, ln.Addr().String())
	io.WriteString(ok.nc, req("r", "rp"))
	if st, eb := ok.answer(t, 30*time.Second); st != 200 {
		t.Fatalf("right credentials after failures: %d %+v", st, eb)
	}
	if n := th.Addrs(); n != 0 {
		t.Fatalf("the address is still remembered after a success (%d)", n)
	}
}

// TestSilentConnectionClosed: a connection that never sends a request
// (so never authenticates) is closed after HeaderTimeout.
func TestSilentConnectionClosed(t *testing.T) {
	ln := localListener(t)
	guardedServer(t, httpapitest.NewFake(), httpapi.Config{HeaderTimeout: 200 * time.Millisecond}, ln)
	c := dialHTTP(t, ln.Addr().String())
	if !c.closed(t, 10*time.Second) {
		t.Fatal("a connection that sent nothing is still open")
	}
}
