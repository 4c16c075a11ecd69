package client_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// The default HTTP client keeps a connection per concurrent caller
// instead of closing all but two after each burst and dialing again.
func TestDefaultClientReusesConnections(t *testing.T) {
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 32, 20
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() { // ends after its rounds
			defer wg.Done()
			key := fmt.Sprintf("k%d", w)
			for range rounds {
				if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 10000}); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Release(ctx, api.ReleaseRequest{Key: key, Owner: "o"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if d := dials.Load(); d > 2*workers {
		t.Fatalf("%d connections for %d concurrent callers (%d requests)", d, workers, 2*workers*rounds)
	}
}
