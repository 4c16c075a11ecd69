package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// tWriter sends log lines to t until the test ends (goroutines may
// outlive it by a moment; t.Log would then panic).
type tWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func newListener(t testing.TB) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: ln}
}

// newTransport starts a Transport closed at the end of the test; edit may
// adjust the config.
func newTransport(t testing.TB, edit func(*Config)) *Transport {
	t.Helper()
	cfg := DefaultConfig()
	if tt, ok := t.(*testing.T); ok {
		w := &tWriter{t: tt}
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "transport", Level: hclog.Debug, Output: w})
		t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	}
	if edit != nil {
		edit(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func echo(_ context.Context, req []byte) ([]byte, error) { return append([]byte("echo:"), req...), nil }

func TestCallEcho(t *testing.T) {
	srv := newTransport(t, nil)
	srv.Serve(echo)
	cli := newTransport(t, nil)
	for _, req := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("y"), 1<<20)} {
		got, err := cli.Call(context.Background(), srv.Addr().String(), req)
		if err != nil {
			t.Fatal(err)
		}
		if want := append([]byte("echo:"), req...); !bytes.Equal(got, want) {
			t.Fatalf("got %d bytes, want %d", len(got), len(want))
		}
	}
}

func TestCallWaitsForServe(t *testing.T) {
	ln := newListener(t)
	srv := newTransport(t, func(c *Config) { c.Listener = ln })
	cli := newTransport(t, nil)
	type res struct {
		b   []byte
		err error
	}
	done := make(chan res, 1)
	go func() { // ends when the call returns (answered, or the test's 10s deadline)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := cli.Call(ctx, srv.Addr().String(), []byte("early"))
		done <- res{b, err}
	}()
	waitFor(t, 5*time.Second, "the call's connection", func() bool { return ln.n.Load() == 1 })
	select {
	case r := <-done:
		t.Fatalf("call returned before Serve: %q, %v", r.b, r.err)
	default:
	}
	srv.Serve(echo)
	r := <-done
	if r.err != nil || string(r.b) != "echo:early" {
		t.Fatalf("got %q, %v", r.b, r.err)
	}
}

func TestConcurrentCallsArePipelinedOverFewConns(t *testing.T) {
	const calls = 64
	for _, maxConns := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("max=%d", maxConns), func(t *testing.T) {
			ln := newListener(t)
			srv := newTransport(t, func(c *Config) { c.Listener = ln })
			// Every handler waits until all calls are in flight at once:
			// this only finishes if calls are neither serialised nor
			// limited to one per connection.
			var arrived atomic.Int64
			all := make(chan struct{})
			srv.Serve(func(ctx context.Context, req []byte) ([]byte, error) {
				if arrived.Add(1) == calls {
					close(all)
				}
				select {
				case <-all:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return req, nil
			})
			cli := newTransport(t, func(c *Config) { c.MaxConnsPerPeer = maxConns })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for i := range calls {
				wg.Add(1)
				go func() { // ends when its call returns
					defer wg.Done()
					want := fmt.Sprint(i)
					got, err := cli.Call(ctx, srv.Addr().String(), []byte(want))
					if err == nil && string(got) != want {
						err = fmt.Errorf("call %d got %q", i, got)
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := ln.n.Load(); n < 1 || n > int64(maxConns) {
				t.Fatalf("%d connections accepted, want 1..%d", n, maxConns)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	srv := newTransport(t, nil)
	srv.Serve(func(_ context.Context, req []byte) ([]byte, error) {
		switch string(req) {
		case "fail":
			return nil, errors.New("no such lock")
		case "panic":
			panic("handler bug")
		case "huge":
			return make([]byte, MaxFrameSize+1), nil
		}
		return req, nil
	})
	cli := newTransport(t, nil)
	tests := []struct {
		req      string
		wantText string
	}{
		{"fail", "no such lock"},
		{"panic", "handler bug"},
		{"huge", "frame too large"},
	}
	for _, tc := range tests {
		t.Run(tc.req, func(t *testing.T) {
			_, err := cli.Call(context.Background(), srv.Addr().String(), []byte(tc.req))
			if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("err %v, want ErrRemote containing %q", err, tc.wantText)
			}
			// The connection survives a handler error.
			if got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("ok")); err != nil || string(got) != "ok" {
				t.Fatalf("follow-up call: %q, %v", got, err)
			}
		})
	}
	if _, err := cli.Call(context.Background(), srv.Addr().String(), make([]byte, MaxFrameSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized request: err %v, want ErrTooLarge", err)
	}
}

// TestConnLostFailsFast: a call in flight fails at once, well before its
// deadline, when its connection goes away.
func TestConnLostFailsFast(t *testing.T) {
	tests := []struct {
		name string
		kill func(srv *Transport, clientConns func() []net.Conn)
	}{
		{"server closed", func(srv *Transport, _ func() []net.Conn) { srv.Close() }},
		{"client conn killed", func(_ *Transport, conns func() []net.Conn) {
			for _, c := range conns() {
				c.Close()
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTransport(t, nil)
			started := make(chan struct{}, 1)
			srv.Serve(func(ctx context.Context, _ []byte) ([]byte, error) {
				started <- struct{}{}
				<-ctx.Done() // a long linearizable read, say
				return nil, ctx.Err()
			})
			var mu sync.Mutex
			var dialed []net.Conn
			cli := newTransport(t, func(c *Config) {
				c.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
					conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
					if err == nil {
						mu.Lock()
						dialed = append(dialed, conn)
						mu.Unlock()
					}
					return conn, err
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errc := make(chan error, 1)
			go func() { // ends when the call returns
				_, err := cli.Call(ctx, srv.Addr().String(), []byte("slow"))
				errc <- err
			}()
			<-started
			begin := time.Now()
			tc.kill(srv, func() []net.Conn { mu.Lock(); defer mu.Unlock(); return append([]net.Conn(nil), dialed...) })
			select {
			case err := <-errc:
				if !errors.Is(err, ErrConnLost) {
					t.Fatalf("err %v, want ErrConnLost", err)
				}
				if d := time.Since(begin); d > 5*time.Second {
					t.Fatalf("took %v to fail", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("call still blocked 5s after its connection went away")
			}
		})
	}
}

func TestCallDeadline(t *testing.T) {
	srv := newTransport(t, nil)
	handlerCancelled := make(chan struct{})
	srv.Serve(func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		close(handlerCancelled)
		return nil, ctx.Err()
	})
	t.Run("ctx deadline", func(t *testing.T) {
		cli := newTransport(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		begin := time.Now()
		_, err := cli.Call(ctx, srv.Addr().String(), nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want DeadlineExceeded", err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Fatalf("returned after %v", d)
		}
		// The caller's cancel frame reaches the server and cancels the handler.
		select {
		case <-handlerCancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("handler ctx not cancelled after the caller gave up")
		}
	})
	t.Run("CallTimeout default", func(t *testing.T) {
		cli := newTransport(t, func(c *Config) { c.CallTimeout = 50 * time.Millisecond })
		_, err := cli.Call(context.Background(), srv.Addr().String(), nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want DeadlineExceeded", err)
		}
	})
	t.Run("dial to dead peer", func(t *testing.T) {
		ln := newListener(t)
		addr := ln.Addr().String()
		ln.Close()
		cli := newTransport(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Call(ctx, addr, nil); err == nil {
			t.Fatal("call to a closed port succeeded")
		}
	})
}

// TestBadInput sends malformed connections; the server drops each one and
// keeps serving.
func TestBadInput(t *testing.T) {
	srv := newTransport(t, nil)
	srv.Serve(echo)
	hdr := func(n uint32, kind frameKind, id uint64) []byte {
		b := binary.BigEndian.AppendUint32(nil, n)
		b = append(b, byte(kind))
		return binary.BigEndian.AppendUint64(b, id)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"unknown first byte", []byte{0x7F, 1, 2, 3}},
		{"zero first byte", []byte{0}},
		{"garbage after rpc byte", append([]byte{typeRPC}, "GET / HTTP/1.1\r\n\r\n"...)},
		{"huge length prefix", append([]byte{typeRPC}, hdr(0xFFFFFFFF, kindRequest, 1)...)},
		{"length below header", append([]byte{typeRPC}, hdr(3, kindRequest, 1)...)},
		{"unknown kind", append([]byte{typeRPC}, hdr(9, 99, 1)...)},
		{"response kind sent to server", append([]byte{typeRPC}, hdr(9, kindResponse, 1)...)},
		{"truncated large body", append(append([]byte{typeRPC}, hdr(9+MaxFrameSize, kindRequest, 1)...), "short"...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(tc.in); err != nil {
				t.Fatal(err)
			}
			if tc.name == "truncated large body" {
				c.(*net.TCPConn).CloseWrite() // the server sees EOF mid-body
			}
			expectDropped(t, c)
		})
	}
	// Duplicate request id on one connection: protocol violation.
	t.Run("duplicate id", func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		srv2 := newTransport(t, nil)
		srv2.Serve(func(ctx context.Context, _ []byte) ([]byte, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, nil
		})
		c, err := net.Dial("tcp", srv2.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		in := append([]byte{typeRPC}, appendFrame(nil, kindRequest, 5, nil)...)
		in = appendFrame(in, kindRequest, 5, nil)
		c.Write(in)
		expectDropped(t, c)
	})
	cli := newTransport(t, nil)
	if got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("still up")); err != nil || string(got) != "echo:still up" {
		t.Fatalf("server unusable after bad input: %q, %v", got, err)
	}
}

// expectDropped asserts that the server closes c without sending anything
// (a reset is fine: the server may close with our bytes unread).
func expectDropped(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if n != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("server did not just drop the connection: read %d bytes, %v", n, err)
	}
}

func TestClosed(t *testing.T) {
	srv := newTransport(t, nil)
	srv.Serve(echo)
	cli := newTransport(t, nil)
	if _, err := cli.Call(context.Background(), srv.Addr().String(), nil); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := cli.Call(context.Background(), srv.Addr().String(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after Close: %v, want ErrClosed", err)
	}
	if _, err := cli.RaftStreamLayer().Accept(); !errors.Is(err, ErrClosed) {
		t.Fatalf("raft Accept after Close: %v, want ErrClosed", err)
	}
	if _, err := cli.RaftStreamLayer().Dial("127.0.0.1:1", time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("raft Dial after Close: %v, want ErrClosed", err)
	}
}

// TestCloseLeavesNoGoroutines exercises every goroutine kind (accept loop,
// server and client connections, handlers in flight, raft hand-off) and
// checks that Close ends them all.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv, err := New(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		cli, err := New(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{}, 8)
		srv.Serve(func(ctx context.Context, req []byte) ([]byte, error) {
			if string(req) == "block" {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return req, nil
		})
		for range 10 {
			if _, err := cli.Call(context.Background(), srv.Addr().String(), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		// Calls blocked in handlers when everything closes.
		errc := make(chan error, 4)
		for range 4 {
			go func() { // ends when the call fails (Close below)
				_, err := cli.Call(context.Background(), srv.Addr().String(), []byte("block"))
				errc <- err
			}()
		}
		for range 4 {
			<-started
		}
		// Raft connections: one accepted by raft, one left waiting in hand-off.
		rc, err := cli.RaftStreamLayer().Dial(raftAddr(srv), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		rc2, err := cli.RaftStreamLayer().Dial(raftAddr(srv), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer rc2.Close()
		acc, err := srv.RaftStreamLayer().Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer acc.Close()
		// A connection that never sends its type byte.
		idle, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()

		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := <-errc; !errors.Is(err, ErrConnLost) {
				t.Fatalf("blocked call: %v, want ErrConnLost", err)
			}
		}
		if err := cli.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	waitFor(t, 5*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

func raftAddr(t *Transport) raft.ServerAddress { return raft.ServerAddress(t.Addr().String()) }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"zero optional fields", func(c *Config) { *c = Config{BindAddr: "127.0.0.1:0"} }, true},
		{"no bind addr", func(c *Config) { c.BindAddr = "" }, false},
		{"bad bind addr", func(c *Config) { c.BindAddr = "localhost" }, false},
		{"listener instead of bind addr", func(c *Config) { c.BindAddr = ""; c.Listener = dummyListener{} }, true},
		{"advertise without port", func(c *Config) { c.Advertise = "10.0.0.1" }, false},
		{"advertise port 0", func(c *Config) { c.Advertise = "10.0.0.1:0" }, false},
		{"advertise unspecified", func(c *Config) { c.Advertise = "0.0.0.0:7000" }, false},
		{"advertise host name", func(c *Config) { c.Advertise = "node1.example:7000" }, true},
		{"negative timeout", func(c *Config) { c.CallTimeout = -1 }, false},
		{"negative conns", func(c *Config) { c.MaxConnsPerPeer = -1 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("unspecified bind needs advertise", func(t *testing.T) {
		c := DefaultConfig()
		c.BindAddr = "0.0.0.0:0"
		if tr, err := New(c); err == nil {
			tr.Close()
			t.Fatal("New advertised an unspecified address")
		}
		c.Advertise = "127.0.0.1:7000"
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if got := tr.Addr().String(); got != "127.0.0.1:7000" {
			t.Fatalf("Addr() = %s", got)
		}
	})
}

type dummyListener struct{ net.Listener }
