package httpapitest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
)

// ErrConnRefused is what a Transport in mode Down returns.
var ErrConnRefused = errors.New("httpapitest: connection refused")

// Transport is an in-process http.RoundTripper that serves
// httpapi.New(l) without sockets, so a client can run inside a
// testing/synctest bubble where time is virtual and deterministic. It
// answers each request once the handler returns (no streaming: not for
// Observe). Its modes are those of Server: Up, Down (every request fails
// with ErrConnRefused) and Hang (a request blocks until its context ends).
type Transport struct {
	h    http.Handler
	mode atomic.Int32
	reqs atomic.Int64
}

// NewTransport returns a Transport serving l.
func NewTransport(l api.Locker) *Transport {
	return &Transport{h: httpapi.New(l, httpapi.Config{})}
}

// SetMode switches to Up, Down or Hang.
func (t *Transport) SetMode(m int32) { t.mode.Store(m) }

// Requests returns how many requests were sent through t.
func (t *Transport) Requests() int64 { return t.reqs.Load() }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.reqs.Add(1)
	if r.Body != nil {
		defer r.Body.Close()
	}
	switch t.mode.Load() {
	case Down:
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL, ErrConnRefused)
	case Hang:
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err // the caller gave up while the handler ran
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
