package fence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fence"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

type step struct {
	path   string
	header string // "": none
	status int
	code   string // error body code when status is not 200
}

// failing is a Checker whose backend is down.
type failing struct{ err error }

func (f failing) FenceCheck(context.Context, string, uint64) (api.FenceResult, error) {
	return api.FenceResult{}, f.err
}

func TestMiddleware(t *testing.T) {
	// The registry: a fake cluster that has granted fences 1..3.
	registry := httpapitest.NewFake()
	for i := range 3 {
		if _, err := registry.TryAcquire(context.Background(), api.AcquireRequest{Key: fmt.Sprint("k", i), Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		cfg   fence.Config
		steps []step
	}{
		{"newer and equal tokens pass, older refused", fence.Config{}, []step{
			{"/a", "5", 200, ""},
			{"/a", "5", 200, ""},
			{"/a", "4", 409, api.CodeStaleFence},
			{"/a", "7", 200, ""},
			{"/a", "5", 409, api.CodeStaleFence},
			{"/b", "1", 200, ""}, // resources are independent
		}},
		{"missing or malformed header", fence.Config{}, []step{
			{"/a", "", 428, api.CodeBadRequest},
			{"/a", "-1", 400, api.CodeBadRequest},
			{"/a", "abc", 400, api.CodeBadRequest},
			{"/a", "18446744073709551616", 400, api.CodeBadRequest},
			{"/a", "3", 200, ""}, // the refusals recorded nothing
		}},
		{"optional header", fence.Config{Optional: true}, []step{
			{"/a", "", 200, ""},
			{"/a", "2", 200, ""},
			{"/a", "1", 409, api.CodeStaleFence},
		}},
		{"custom header and resource; unfenced requests", fence.Config{
			Header: "X-Token",
			Resource: func(r *http.Request) string {
				if r.Method == http.MethodGet {
					return ""
				}
				return r.URL.Query().Get("table")
			},
		}, []step{
			{"/x?table=orders", "9", 200, ""},
			{"/y?table=orders", "8", 409, api.CodeStaleFence},
			{"GET /y?table=orders", "", 200, ""},
		}},
		{"registry in front of the local record", fence.Config{Checker: fence.WithRegistry(registry, fence.NewMemory(0))}, []step{
			{"/r", "2", 200, ""},
			{"/r", "1000", 400, api.CodeBadRequest}, // never issued: must not block the resource
			{"/r", "3", 200, ""},
			{"/r", "2", 409, api.CodeStaleFence},
		}},
		{"capacity: a new resource past it is refused, known ones go on", fence.Config{Checker: fence.NewMemory(1)}, []step{
			{"/a", "1", 200, ""},
			{"/b", "1", 503, api.CodeInternal},
			{"/a", "2", 200, ""},
		}},
		{"backend down", fence.Config{Checker: failing{errors.New("connection refused")}}, []step{
			{"/a", "1", 503, api.CodeInternal},
		}},
		{"registry without a leader", fence.Config{Checker: failing{fmt.Errorf("x: %w", api.ErrNoLeader)}}, []step{
			{"/a", "1", 503, api.CodeNoLeader},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := fence.Middleware(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var served []uint64
			h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok, _ := fence.FromContext(r.Context())
				served = append(served, tok)
			}))
			for i, s := range tc.steps {
				method, path := http.MethodPost, s.path
				if len(path) > 4 && path[:4] == "GET " {
					method, path = http.MethodGet, path[4:]
				}
				req := httptest.NewRequest(method, path, nil)
				if s.header != "" {
					name := tc.cfg.Header
					if name == "" {
						name = fence.DefaultHeader
					}
					req.Header.Set(name, s.header)
				}
				rec := httptest.NewRecorder()
				before := len(served)
				h.ServeHTTP(rec, req)
				if rec.Code != s.status {
					t.Fatalf("step %d %s %q: status %d, want %d (%s)", i, s.path, s.header, rec.Code, s.status, rec.Body)
				}
				if s.status == 200 {
					if len(served) != before+1 {
						t.Fatalf("step %d: handler not called", i)
					}
					continue
				}
				if len(served) != before {
					t.Fatalf("step %d: refused request reached the handler", i)
				}
				var body api.ErrorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Code != s.code {
					t.Fatalf("step %d: body %s (%v), want code %q", i, rec.Body, err, s.code)
				}
			}
		})
	}
}

func TestMiddlewareConfigChecked(t *testing.T) {
	for _, h := range []string{"Bad Header", "x:y", "é"} {
		if _, err := fence.Middleware(fence.Config{Header: h}); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("header %q: %v", h, err)
		}
	}
}

func TestMemoryChecksResourceNames(t *testing.T) {
	m := fence.NewMemory(0)
	if _, err := m.FenceCheck(context.Background(), "", 1); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("empty resource: %v", err)
	}
	long := make([]byte, 100_000)
	for i := range long {
		long[i] = 'x'
	}
	if _, err := m.FenceCheck(context.Background(), string(long), 1); err == nil {
		t.Fatal("100 kB resource name accepted")
	}
}
