package transport

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// lineServer answers every line it reads with reply, as a Redis server
// answers an unknown inline command.
func lineServer(t *testing.T, reply string) string {
	t.Helper()
	ln := newListener(t)
	t.Cleanup(func() { ln.Close() })
	// Ends when the listener is closed at the end of the test.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Ends when the client closes the connection.
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A call to an HTTP or Redis port fails at once (not at its deadline)
// with a NotPeerError naming the service; a peer still answers.
func TestCallToAnotherServiceFailsAtOnce(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(web.Close)
	cases := []struct {
		name, addr, service string
	}{
		{"http", strings.TrimPrefix(web.URL, "http://"), "HTTP"},
		{"resp", lineServer(t, "-ERR unknown command\r\n"), "Redis (RESP)"},
		{"other", lineServer(t, "hello there\r\n"), ""},
	}
	cl := newTransport(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			_, err := cl.Call(ctx, tc.addr, []byte("hi"))
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v: the call waited for its deadline", took)
			}
			var np *NotPeerError
			if !errors.As(err, &np) || !errors.Is(err, ErrNotPeer) || !errors.Is(err, ErrConnLost) {
				t.Fatalf("err = %v, want a NotPeerError (and ErrConnLost)", err)
			}
			if np.Service != tc.service || np.Addr != tc.addr {
				t.Errorf("NotPeerError %+v, want service %q at %s", np, tc.service, tc.addr)
			}
			if tc.service != "" && !strings.Contains(err.Error(), "that is "+np.What()) || !strings.Contains(np.What(), tc.service) {
				t.Errorf("message %q does not name the service", err)
			}
		})
	}
	srv := newTransport(t, nil)
	srv.Serve(echo)
	if got, err := cl.Call(context.Background(), srv.Addr().String(), []byte("x")); err != nil || string(got) != "echo:x" {
		t.Fatalf("peer call: %q, %v", got, err)
	}
}

// The cancel frame that opens a connection is a whole frame a peer
// ignores: a raw connection that sends it, then a request, is answered.
func TestProbeFrameIgnoredByPeer(t *testing.T) {
	srv := newTransport(t, nil)
	srv.Serve(echo)
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := []byte{typeRPC}
	b = appendFrame(b, kindCancel, probeID, nil)
	b = appendFrame(b, kindRequest, 1, []byte("y"))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [frameHeader]byte
	f, err := readFrame(bufio.NewReader(c), &hdr, MaxFrameSize)
	if err != nil || f.kind != kindResponse || f.id != 1 || string(f.body) != "echo:y" {
		t.Fatalf("answer %+v, %v", f, err)
	}
	if !strings.HasSuffix(string(appendFrame(nil, kindCancel, probeID, nil)), "\r\n") {
		t.Fatal("the probe frame does not end a line")
	}
}
