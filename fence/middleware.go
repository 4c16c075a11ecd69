package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// DefaultHeader carries the fencing token in requests to a fenced
// resource.
const DefaultHeader = "Locknode-Fence"

// Config configures Middleware.
type Config struct {
	// Checker records and checks tokens. Default: NewMemory(0).
	Checker Checker
	// Header is the request header holding the decimal token. Default
	// DefaultHeader.
	Header string
	// Resource names the resource a request touches (the fence
	// registry's resource name). Default: the URL path. Returning ""
	// serves the request unchecked (reads, health checks).
	Resource func(*http.Request) string
	// Optional serves requests without the header unchecked. By default
	// they are refused with 428 Precondition Required: a writer that
	// forgot its token must not slip past the fence.
	Optional bool
	// Logger; default: a null logger.
	Logger hclog.Logger
}

// Validate checks cfg.
func (cfg Config) Validate() error {
	if cfg.Header != "" && !isToken(cfg.Header) {
		return fmt.Errorf("%w: fence: bad header name %q", api.ErrBadRequest, cfg.Header)
	}
	return nil
}

// isToken: an RFC 9110 token, what a header name must be.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

type ctxKey struct{}

// FromContext returns the token a request was admitted with, for a
// handler that makes its write conditional on it (see pgfence).
func FromContext(ctx context.Context) (token uint64, ok bool) {
	token, ok = ctx.Value(ctxKey{}).(uint64)
	return token, ok
}

// Middleware refuses requests whose fencing token is older than the
// highest the Checker has seen for their resource:
//
//   - no header: 428 (unless Optional); not a decimal uint64: 400;
//   - a stale token: 409 stale_fence, the highest token in the message;
//   - a token the registry never issued (WithRegistry): 400;
//   - the Checker failing (unreachable cluster or database, ErrFull): 503,
//     or the status of the api error it returned;
//
// otherwise the request goes on with the token in its context
// (FromContext). Error bodies are api.ErrorBody JSON. The check records
// the token before the handler runs, whatever the handler then does.
func Middleware(cfg Config) (func(http.Handler) http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Checker == nil {
		cfg.Checker = NewMemory(0)
	}
	if cfg.Header == "" {
		cfg.Header = DefaultHeader
	}
	if cfg.Resource == nil {
		cfg.Resource = func(r *http.Request) string { return r.URL.Path }
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res := cfg.Resource(r)
			if res == "" {
				next.ServeHTTP(w, r)
				return
			}
			raw := r.Header.Get(cfg.Header)
			if raw == "" {
				if cfg.Optional {
					next.ServeHTTP(w, r)
					return
				}
				refuse(w, http.StatusPreconditionRequired, api.CodeBadRequest, "fence: header "+cfg.Header+" required")
				return
			}
			token, err := strconv.ParseUint(raw, 10, 64)
			if err != nil {
				refuse(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("fence: header %s: not a token: %q", cfg.Header, truncate(raw)))
				return
			}
			got, err := cfg.Checker.FenceCheck(r.Context(), res, token)
			if err != nil {
				status, code := wire.StatusOf(err)
				if status == http.StatusInternalServerError || errors.Is(err, ErrFull) {
					status, code = http.StatusServiceUnavailable, api.CodeInternal
				}
				cfg.Logger.Warn("fence check failed", "resource", res, "token", token, "error", err)
				refuse(w, status, code, err.Error())
				return
			}
			if !got.OK {
				refuse(w, http.StatusConflict, api.CodeStaleFence,
					fmt.Sprintf("%v: token %d, highest %d", api.ErrStaleFence, token, got.Highest))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, token)))
		})
	}, nil
}

// truncate keeps an echoed header value short.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", wire.ContentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Code: code, Message: msg})
}
