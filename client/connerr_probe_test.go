package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// The TLS probe after a dropped plain-HTTP request goes through the
// client's own dialer: an endpoint only that dialer can reach (here a
// name that resolves nowhere) is still told apart as TLS or plain.
func TestSpeaksTLSDialsThroughTheClientsTransport(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.NotFoundHandler())
	defer plainSrv.Close()

	for _, tc := range []struct {
		name   string
		target string
		want   bool
	}{
		{"tls port", tlsSrv.Listener.Addr().String(), true},
		{"plain port", plainSrv.Listener.Addr().String(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dials atomic.Int32
			hc := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					dials.Add(1)
					var d net.Dialer
					return d.DialContext(ctx, network, tc.target)
				},
			}}
			got := speaksTLS(context.Background(), probeDial(hc), "http://node-a.invalid:7000")
			if got != tc.want {
				t.Errorf("speaksTLS = %v, want %v", got, tc.want)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("the client's dialer was called %d times, want 1", n)
			}
		})
	}
}

// Without a dialer of its own the probe dials directly.
func TestProbeDialDefault(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	for _, hc := range []*http.Client{nil, {}, {Transport: &http.Transport{}}} {
		if !speaksTLS(context.Background(), probeDial(hc), "http://"+srv.Listener.Addr().String()) {
			t.Errorf("transport %T: a TLS port not recognised", hc)
		}
	}
}
