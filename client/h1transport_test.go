package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/client"
)

// countingServer is an httptest server that counts the connections
// clients opened to it.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func get(t *testing.T, hc *http.Client, ctx context.Context, method, url, body string) (int, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestTransportReusesOneConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(b))
	})
	hc := &http.Client{Transport: client.NewTransport(4)}
	for i := range 20 {
		method, body := "GET", ""
		if i%2 == 1 {
			method, body = "POST", `{"n":1}`
		}
		st, got, err := get(t, hc, context.Background(), method, srv.URL+"/p/a%2Fb?x=1", body)
		if want := method + " /p/a%2Fb?x=1 " + body; err != nil || st != 200 || got != want {
			t.Fatalf("request %d: %d %q %v, want 200 %q", i, st, got, err, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 20 sequential requests", n)
	}
}

// A connection the server closed while it sat in the pool is noticed
// before the next request is sent on it (a POST too), or, for a request
// that may run twice, when its answer does not come: the request goes
// again on a new connection.
func TestTransportRetriesOnAStalePooledConnection(t *testing.T) {
	var bodies atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); string(b) == "payload" {
			bodies.Add(1)
		}
		io.WriteString(w, "ok")
	})
	rt := client.NewTransport(4)
	// Connections here are closed the moment they are pooled; the check
	// normally skips connections idle for less than 100 ms.
	client.CheckEveryReuse(rt)
	hc := &http.Client{Transport: rt}
	for i := range 3 {
		if st, got, err := get(t, hc, context.Background(), "POST", srv.URL, "payload"); err != nil || st != 200 || got != "ok" {
			t.Fatalf("request %d: %d %q %v", i, st, got, err)
		}
		srv.CloseClientConnections()
	}
	if n := bodies.Load(); n != 3 {
		t.Fatalf("server saw the body %d times for 3 requests", n)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (one per request, each after the previous was closed)", n)
	}

	// Many pooled connections, all closed by the server: one stale hit
	// drops them all, so no request fails.
	const n = 8
	fill := make(chan struct{})
	var started atomic.Int64
	srv2, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if started.Add(1) <= n {
			<-fill // hold the first n requests so they use n connections
		}
		io.WriteString(w, "ok")
	})
	errs := make(chan error, n)
	for range n {
		go func() { // ends when its request is answered
			_, _, err := get(t, hc, context.Background(), "GET", srv2.URL, "")
			errs <- err
		}()
	}
	waitFor(t, "n requests in the handler", func() bool { return started.Load() == n })
	close(fill)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	srv2.CloseClientConnections()
	for i := range n {
		if st, got, err := get(t, hc, context.Background(), "GET", srv2.URL, ""); err != nil || st != 200 || got != "ok" {
			t.Fatalf("request %d after the server closed %d pooled connections: %d %q %v", i, n, st, got, err)
		}
	}
}

// Cancelling a request's context ends a request blocked on the answer at
// once, the server sees the connection go, and the next request works.
func TestTransportCancelEndsABlockedRequest(t *testing.T) {
	gone := make(chan struct{}, 1)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-r.Context().Done() // ends when the client's connection closes
			gone <- struct{}{}
			return
		}
		io.WriteString(w, "ok")
	})
	hc := &http.Client{Transport: client.NewTransport(4)}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := get(t, hc, ctx, "GET", srv.URL+"/block", "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked request after cancel: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the cancelled request's connection close")
	}
	if st, got, err := get(t, hc, context.Background(), "GET", srv.URL+"/x", ""); err != nil || st != 200 || got != "ok" {
		t.Fatalf("request after a cancel: %d %q %v", st, got, err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the cancelled one is not reused)", n)
	}
}

// A streamed (chunked) answer can be read line by line; closing it early
// closes its connection instead of returning it half-read to the pool;
// cancelling the context interrupts a read that waits for the next line.
func TestTransportStreamsAndClosesEarly(t *testing.T) {
	release := make(chan struct{})
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			io.WriteString(w, "ok")
			return
		}
		rc := http.NewResponseController(w)
		for i := 0; ; i++ {
			if _, err := io.WriteString(w, "line\n"); err != nil {
				return
			}
			rc.Flush()
			if i == 1 {
				select { // ends when the test lets it or the client leaves
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
	})
	defer close(release)
	hc := &http.Client{Transport: client.NewTransport(4)}
	for _, how := range []string{"close", "cancel"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/stream", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for range 2 {
			if !sc.Scan() || sc.Text() != "line" {
				t.Fatalf("%s: stream gave %q %v", how, sc.Text(), sc.Err())
			}
		}
		if how == "close" {
			resp.Body.Close()
		} else {
			time.AfterFunc(50*time.Millisecond, cancel)
			if sc.Scan() {
				t.Fatalf("cancel: read %q after the cancel", sc.Text())
			}
			if !errors.Is(sc.Err(), context.Canceled) {
				t.Fatalf("cancel: stream ended with %v, want context.Canceled", sc.Err())
			}
			resp.Body.Close()
		}
		cancel()
	}
	if st, got, err := get(t, hc, context.Background(), "GET", srv.URL+"/x", ""); err != nil || st != 200 || got != "ok" {
		t.Fatalf("request after the streams: %d %q %v", st, got, err)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (neither stream's connection is reused)", n)
	}
}

// An answer with Connection: close is not pooled; a refused dial is an
// error, not a hang.
func TestTransportConnectionCloseAndDialFailure(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	hc := &http.Client{Transport: client.NewTransport(4)}
	for range 3 {
		if st, got, err := get(t, hc, context.Background(), "GET", srv.URL, ""); err != nil || st != 200 || got != "bye" {
			t.Fatalf("%d %q %v", st, got, err)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections for 3 Connection: close answers", n)
	}
	if _, _, err := get(t, hc, context.Background(), "GET", deadURL(t), ""); err == nil {
		t.Fatal("request to a closed port succeeded")
	}
}

// https goes through the fallback (net/http's transport): it reaches a
// TLS server, here one whose certificate that transport does not trust.
func TestTransportFallsBackForHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls") }))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: client.NewTransport(4)}
	_, _, err := get(t, hc, context.Background(), "GET", srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("https request: %v, want a certificate error from the TLS handshake", err)
	}
}

// A request the server may have run before it closed the connection is
// not sent again unless it may run twice (net/http's rule): a POST
// fails, a POST with an idempotency key and a GET are retried.
func TestTransportDoesNotResendARequestTheServerMayHaveRun(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		key          bool
		wantRuns     int64 // handler runs for the two requests
		wantErr      bool
	}{
		{"POST", "POST", false, 2, true},
		{"POST with Idempotency-Key", "POST", true, 3, false},
		{"GET", "GET", false, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if runs.Add(1) == 2 {
					// Ran it, then died without answering.
					c, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						c.Close()
					}
					return
				}
				io.WriteString(w, "ok")
			})
			hc := &http.Client{Transport: client.NewTransport(4)}
			do := func() error {
				req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader("x"))
				if err != nil {
					t.Fatal(err)
				}
				if tc.key {
					req.Header.Set("Idempotency-Key", "k1")
				}
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				_, err = io.ReadAll(resp.Body)
				return err
			}
			if err := do(); err != nil {
				t.Fatal(err)
			}
			err := do() // on the pooled connection the server closes after running it
			if (err != nil) != tc.wantErr {
				t.Fatalf("second request: err %v, want error %v", err, tc.wantErr)
			}
			if got := runs.Load(); got != tc.wantRuns {
				t.Fatalf("handler ran %d times, want %d", got, tc.wantRuns)
			}
		})
	}
}
