package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// limitedServer serves l the way cmd/locknode does (NewServer on a
// LimitListener) on 127.0.0.1:0 and returns its address.
func limitedServer(t *testing.T, l api.Locker, cfg httpapi.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.New(l, cfg), cfg)
	done := make(chan struct{})
	// Ends when Close (in cleanup) closes the listener.
	go func() {
		defer close(done)
		if err := srv.Serve(httpapi.LimitListener(ln, cfg)); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// rawHTTP is a client connection that writes requests by hand.
type rawHTTP struct {
	nc net.Conn
	br *bufio.Reader
}

func dialHTTP(t *testing.T, addr string) *rawHTTP {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawHTTP{nc: nc, br: bufio.NewReader(nc)}
}

// answer reads one response (within d) and returns its status and error
// body; status 0 means the connection ended without one.
func (c *rawHTTP) answer(t *testing.T, d time.Duration) (int, api.ErrorBody) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("no answer within %v", d)
		}
		return 0, api.ErrorBody{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(raw, &eb); err != nil {
			t.Fatalf("status %d with a non-JSON body %q", resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, eb
}

// closed reports whether the server closed the connection (within d).
func (c *rawHTTP) closed(t *testing.T, d time.Duration) bool {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	_, err := c.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

const tryBody = `{"key":"k","owner":"o","ttl_ms":1000}`

func tryRequest(body string) string {
	return "POST /v1/locks/try HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
}

// serves checks that addr answers a fresh request normally.
func serves(t *testing.T, addr string) {
	t.Helper()
	c := dialHTTP(t, addr)
	io.WriteString(c.nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	if st, eb := c.answer(t, 10*time.Second); st != 200 {
		t.Fatalf("the node no longer serves: %d %+v", st, eb)
	}
}

func TestBodyOverTheLimitIs413(t *testing.T) {
	fake := httpapitest.NewFake()
	addr := limitedServer(t, fake, httpapi.Config{MaxBodyBytes: 256})
	big := `{"key":"` + strings.Repeat("x", 300) + `","owner":"o","ttl_ms":1}`
	cases := []struct{ name, request string }{
		{"declared length", tryRequest(big)},
		{"declared length, body not sent", "POST /v1/locks/try HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"},
		{"chunked", "POST /v1/locks/try HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := dialHTTP(t, addr)
			io.WriteString(rc.nc, c.request)
			st, eb := rc.answer(t, 10*time.Second)
			if st != http.StatusRequestEntityTooLarge || eb.Code != api.CodeLimit || !strings.Contains(eb.Message, "256") {
				t.Fatalf("got %d %+v, want 413 %s", st, eb, api.CodeLimit)
			}
		})
	}
	if n := fake.Calls("TryAcquire"); n != 0 {
		t.Fatalf("an oversized body reached the Locker %d times", n)
	}
	// The client maps the answer back to api.ErrLimit.
	if err := wire.ErrorOf(api.CodeLimit); err != api.ErrLimit {
		t.Fatalf("ErrorOf(limit) = %v", err)
	}
	serves(t, addr)
}

// TestSlowBodiesAreCutAndNotAllocated: 300 connections that each declare
// a 1 MiB body and send one byte cost the server about what they sent
// (not 300 MiB up front), are answered 408 and closed once BodyTimeout
// passes, and the node serves on.
func TestSlowBodiesAreCutAndNotAllocated(t *testing.T) {
	const (
		conns       = 300
		bodyTimeout = 500 * time.Millisecond
	)
	fake := httpapitest.NewFake()
	addr := limitedServer(t, fake, httpapi.Config{MaxBodyBytes: 1 << 20, BodyTimeout: bodyTimeout})
	serves(t, addr) // warm up: the server's own start-up allocations are not counted

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	cs := make([]*rawHTTP, conns)
	for i := range cs {
		cs[i] = dialHTTP(t, addr)
		io.WriteString(cs[i].nc, "POST /v1/locks/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{")
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		// Ends when the connection answered or failed (answer's deadline).
		go func() {
			defer wg.Done()
			c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(c.br, nil)
			if err != nil {
				t.Errorf("connection %d: no answer: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("connection %d: status %d, want 408", i, resp.StatusCode)
			}
			if !c.closed(t, 10*time.Second) {
				t.Errorf("connection %d: still open after its 408", i)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d < bodyTimeout {
		t.Fatalf("answered after %v, before the body timeout %v", d, bodyTimeout)
	}
	runtime.ReadMemStats(&after)
	// Reading a body that declares 1 MiB by its declared length allocates
	// 300 MiB here; what each connection really costs (net/http's buffers,
	// goroutines, the answers) is a few KiB.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d connections: %d KiB allocated in all", conns, alloc>>10)
	if alloc > 64<<20 {
		t.Fatalf("the server allocated %d MiB for %d one-byte bodies", alloc>>20, conns)
	}
	if n := fake.Calls("Acquire"); n != 0 {
		t.Fatalf("an incomplete body reached the Locker %d times", n)
	}
	serves(t, addr)
}

// TestBodyTimeoutDoesNotCutTheWait: the body deadline ends with the
// body; a blocking acquire then waits its whole wait_ms.
func TestBodyTimeoutDoesNotCutTheWait(t *testing.T) {
	fake := httpapitest.NewFake()
	addr := limitedServer(t, fake, httpapi.Config{BodyTimeout: 100 * time.Millisecond})
	c := dialHTTP(t, addr)
	io.WriteString(c.nc, tryRequest(tryBody))
	if st, eb := c.answer(t, 10*time.Second); st != 200 {
		t.Fatalf("first acquire: %d %+v", st, eb)
	}
	const wait = 600 * time.Millisecond
	body := fmt.Sprintf(`{"key":"k","owner":"p","ttl_ms":1000,"wait_ms":%d}`, wait.Milliseconds())
	start := time.Now()
	io.WriteString(c.nc, "POST /v1/locks/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\n\r\n"+body)
	st, eb := c.answer(t, 10*time.Second)
	if st != http.StatusRequestTimeout || eb.Code != api.CodeWaitTimeout {
		t.Fatalf("waiter: %d %+v, want 408 %s", st, eb, api.CodeWaitTimeout)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("the wait ended after %v, before its wait_ms %v", d, wait)
	}
}

func TestHeaderTimeoutClosesTheConnection(t *testing.T) {
	addr := limitedServer(t, httpapitest.NewFake(), httpapi.Config{HeaderTimeout: 200 * time.Millisecond})
	c := dialHTTP(t, addr)
	io.WriteString(c.nc, "POST /v1/locks/try HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n") // and never the blank line
	if !c.closed(t, 10*time.Second) {
		t.Fatal("a connection with an unfinished header is still open")
	}
	serves(t, addr)
}

func TestConnectionCap(t *testing.T) {
	addr := limitedServer(t, httpapitest.NewFake(), httpapi.Config{MaxConns: 2})
	held := make([]*rawHTTP, 2)
	for i := range held {
		held[i] = dialHTTP(t, addr)
		io.WriteString(held[i].nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		if st, eb := held[i].answer(t, 10*time.Second); st != 200 {
			t.Fatalf("connection %d: %d %+v", i, st, eb)
		}
	}
	over := dialHTTP(t, addr)
	io.WriteString(over.nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	st, eb := over.answer(t, 10*time.Second)
	if st != http.StatusServiceUnavailable || eb.Code != wire.CodeTooManyConns {
		t.Fatalf("third connection: %d %+v, want 503 %s", st, eb, wire.CodeTooManyConns)
	}
	if !over.closed(t, 10*time.Second) {
		t.Fatal("the refused connection is still open")
	}
	if !errors.Is(wire.ErrorOf(eb.Code), wire.ErrTooManyConns) || !wire.Retryable(st) {
		t.Fatalf("the answer does not map back to ErrTooManyConns or is not retryable")
	}
	// The held connections still work; once one closes, a new one is served.
	io.WriteString(held[0].nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	if st, eb := held[0].answer(t, 10*time.Second); st != 200 {
		t.Fatalf("held connection: %d %+v", st, eb)
	}
	held[1].nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialHTTP(t, addr)
		io.WriteString(c.nc, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		st, _ := c.answer(t, 10*time.Second)
		if st == 200 {
			break
		}
		c.nc.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one closed: last status %d", st)
		}
		time.Sleep(10 * time.Millisecond) // poll interval while the server notices the close
	}
}
