package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// internalText finds what a client must never read in an error: the name
// of a Go package as a prefix, or Go's struct and type names.
var internalText = regexp.MustCompile(`(^|: |\()(fsm|cluster|httpapi|redisbridge|client|api|auth|transport|raft|json|locknode): |Go (struct|value)|of type |api\.[A-Z]|[A-Z][a-z]+Request\.`)

// checkClientText fails when msg carries internal names.
func checkClientText(t *testing.T, what, msg string) {
	t.Helper()
	if m := internalText.FindString(msg); m != "" {
		t.Errorf("%s: %q shows an internal name (%q)", what, msg, m)
	}
}

// Every refusal of the HTTP API names its cause in the API's words, once,
// and says what is wanted where a value was refused.
func TestErrorBodiesNameTheCause(t *testing.T) {
	fake := httpapitest.NewFake()
	t.Cleanup(func() { fake.Close() })
	srv := newServer(t, fake, httpapi.Config{})
	if st, eb := call(t, srv, "POST", wire.PathAcquire, api.AcquireRequest{Key: "k", Owner: "worker-1", TTLMs: 60000}, nil); st != 200 {
		t.Fatalf("setup: %d %+v", st, eb)
	}
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
		want               []string // substrings of the message, in order
	}{
		{"ttl as a string", "POST", wire.PathAcquire, `{"key":"k","owner":"o","ttl_ms":"5s"}`, 400, api.CodeBadRequest,
			[]string{"field ttl_ms: want a whole number of milliseconds, not a string"}},
		{"keys as a string", "POST", wire.PathAcquire, `{"keys":"k","owner":"o","ttl_ms":5}`, 400, api.CodeBadRequest,
			[]string{"field keys: want an array of strings"}},
		{"reentrant as a number", "POST", wire.PathTry, `{"key":"k","owner":"o","ttl_ms":5,"reentrant":1}`, 400, api.CodeBadRequest,
			[]string{"field reentrant: want true or false, not a number"}},
		{"an array body", "POST", wire.PathAcquire, `[1]`, 400, api.CodeBadRequest, []string{"must be a JSON object, not an array"}},
		{"cut short", "POST", wire.PathAcquire, `{"key":"k"`, 400, api.CodeBadRequest, []string{"not valid JSON", "ends early"}},
		{"syntax", "POST", wire.PathAcquire, `{"key":"k",,}`, 400, api.CodeBadRequest, []string{"not valid JSON", "at byte"}},
		{"unknown field", "POST", wire.PathAcquire, `{"key":"k","owner":"o","ttl_ms":5,"bogus":1}`, 400, api.CodeBadRequest, []string{`unknown field "bogus"`}},
		{"unknown mode", "POST", wire.PathAcquire, `{"key":"k","owner":"o","ttl_ms":5,"mode":"read"}`, 400, api.CodeBadRequest,
			[]string{`unknown mode "read"`, api.ModeExclusive, api.ModeShared, api.ModeSemaphore}},
		{"held", "POST", wire.PathTry, api.AcquireRequest{Key: "k", Owner: "w2", TTLMs: 1000}, 423, api.CodeLocked,
			[]string{"held by another owner", `holder "worker-1", fence `}},
		{"not the owner", "POST", wire.PathRelease, api.ReleaseRequest{Key: "k", Owner: "w2"}, 409, api.CodeNotOwner, []string{"not the owner", `"k"`}},
		{"not held", "POST", wire.PathRelease, api.ReleaseRequest{Key: "free", Owner: "w2"}, 404, api.CodeNotHeld, []string{"not held", `"free"`}},
		{"no such lock", "GET", wire.PathLockPrefix + "nokey", nil, 404, api.CodeNotFound, []string{`"nokey"`}},
		{"over the ttl limit", "POST", wire.PathAcquire, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1 << 40}, 400, api.CodeLimit, []string{"ttl_ms", "over the limit of"}},
		{"semaphore conflict", "POST", wire.PathAcquire, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 5, Mode: api.ModeSemaphore, Permits: 2}, 409, "", []string{"conflicting lock parameters"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, eb := call(t, srv, c.method, c.path, c.body, nil)
			if st != c.status || (c.code != "" && eb.Code != c.code) {
				t.Fatalf("got %d %q (%q), want %d %q", st, eb.Code, eb.Message, c.status, c.code)
			}
			checkClientText(t, c.name, eb.Message)
			rest := eb.Message
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("message %q lacks %q (in order %q)", eb.Message, w, c.want)
				}
				rest = rest[i+len(w):]
			}
			if first, _, ok := strings.Cut(eb.Message, ": "); ok && strings.Count(eb.Message, first) > 1 {
				t.Errorf("message %q states its cause %q twice", eb.Message, first)
			}
		})
	}
}

// A refused try names the holder only to a caller who may read the key
// (GET /v1/locks/{key} would show it to them anyway).
func TestTryNamesTheHolderToReaders(t *testing.T) {
	srv, _, fake := usersHandlerFake(t)
	if _, err := fake.Acquire(context.Background(), api.AcquireRequest{Key: "app:k", Owner: "worker-1", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, pass string
		shown      bool
	}{
		{"w", "wp", false}, // +@write only: may take the lock, not see who holds it
		{"all", "allp", true},
	} {
		st, body := send(t, srv, c.user, c.pass, routeSample{"POST", wire.PathTry, api.AcquireRequest{Key: "app:k", Owner: "x", TTLMs: 1000}})
		if st != http.StatusLocked {
			t.Fatalf("%s: %d %s", c.user, st, body)
		}
		if got := strings.Contains(body, "worker-1"); got != c.shown {
			t.Errorf("user %s: holder shown %v, want %v: %s", c.user, got, c.shown, body)
		}
		if !strings.Contains(body, "held by another owner") {
			t.Errorf("user %s: %s", c.user, body)
		}
		checkClientText(t, c.user, body)
	}
}

// The texts of every error the HTTP layer itself refuses with carry no
// package names once rendered for a client.
func TestOwnErrorsRenderCleanly(t *testing.T) {
	for _, err := range []error{wire.ErrBodyTooLarge, wire.ErrBodyTimeout, wire.ErrTooManyConns, wire.ErrContentType,
		api.ErrLocked, api.ErrNotOwner, api.ErrNotHeld, api.ErrNotFound, api.ErrWaitTimeout, api.ErrNoLeader, api.ErrBadRequest,
		api.ErrSessionExpired, api.ErrStaleFence, api.ErrConflict, api.ErrLimit, api.ErrCancelled, api.ErrLockDelay, api.ErrMaxHold,
		api.ErrOutOfMemory, api.ErrUnauthorized, api.ErrForbidden} {
		checkClientText(t, err.Error(), api.ClientText(fmt.Errorf("%w: detail", err)))
	}
}
