package client

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/locknode/locknode/wire"
)

// TestEndpointRequestMatchesNewRequest: a request built from a parsed
// endpoint is the one http.NewRequestWithContext builds from the joined
// string, for plain endpoints and those that take the parsing path.
func TestEndpointRequestMatchesNewRequest(t *testing.T) {
	endpoints := []string{
		"http://127.0.0.1:7700", "https://node-1.example:443", "http://[::1]:80", "http://host",
		"http://host/prefix", "http://host/pre%2Ffix", "http://user:pw@host:1", "http://host:",
		"http://host/p?x=1",
	}
	paths := []string{
		wire.PathAcquire, wire.PathTry, wire.PathRelease, wire.PathStatus,
		wire.PathLockPrefix + "a%2Fb", wire.PathLocks + "?prefix=x&limit=3", wire.PathSessions + "/s1/keepalive",
	}
	ctx := context.Background()
	for _, e := range endpoints {
		ep := parseEndpoint(e)
		for _, p := range paths {
			want, werr := http.NewRequestWithContext(ctx, http.MethodPost, e+p, nil)
			got, gerr := ep.request(ctx, http.MethodPost, p, nil)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%s + %s: error %v, NewRequest %v", e, p, gerr, werr)
			}
			if werr != nil {
				continue
			}
			if got.URL.String() != want.URL.String() || got.Host != want.Host || !reflect.DeepEqual(got.URL, want.URL) {
				t.Errorf("%s + %s: URL %#v host %q, NewRequest %#v host %q", e, p, got.URL, got.Host, want.URL, want.Host)
			}
		}
	}
	if parseEndpoint("http://127.0.0.1:7700").url == nil {
		t.Fatal("a plain endpoint is not pre-parsed")
	}
}
