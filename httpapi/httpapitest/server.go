package httpapitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
)

// Fault modes of a Server.
const (
	Up   int32 = iota // serve normally
	Down              // close every connection without an answer
	Hang              // hold every request open, unanswered, until the client gives up
)

// Server is an httptest server serving httpapi.New(l) with fault switches.
// It is closed by t.Cleanup.
type Server struct {
	*httptest.Server
	mode     atomic.Int32
	drop     atomic.Int32
	requests atomic.Int64
}

// NewServer starts a Server for l on 127.0.0.1:0.
func NewServer(t testing.TB, l api.Locker) *Server {
	t.Helper()
	s := &Server{}
	closing := make(chan struct{})
	h := httpapi.New(l, httpapi.Config{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		switch s.mode.Load() {
		case Down:
			hangUp(w)
			return
		case Hang:
			// Read the body first: only then does net/http watch the
			// connection and cancel r.Context() when the client leaves.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-closing:
			}
			return
		}
		if s.drop.Add(-1) >= 0 {
			// Do the work, lose the answer: what a retry must survive.
			h.ServeHTTP(httptest.NewRecorder(), r)
			hangUp(w)
			return
		}
		s.drop.Store(0)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(closing) // release hanging handlers, or Close waits for them
		s.Close()
	})
	return s
}

// SetMode switches to Up, Down or Hang.
func (s *Server) SetMode(m int32) { s.mode.Store(m) }

// DropAnswers makes the next n requests run to completion and then lose
// their answer (the connection is closed).
func (s *Server) DropAnswers(n int) { s.drop.Store(int32(n)) }

// Requests returns how many requests reached the server.
func (s *Server) Requests() int64 { return s.requests.Load() }

func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // not hijackable (HTTP/2): abort the stream instead
	}
	_ = conn.Close()
}
