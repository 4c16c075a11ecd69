package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// Middleware runs the next handler under the lock named by key(r). The
// request's context is replaced by one that also ends when the lock
// leaves Held (see Lock.Context), so a handler that honours its context
// stops before the lease could be lost. The lock is released when the
// handler returns. The handler finds the Lock with LockFromContext: its
// Fence to pass on to the resource, its Progress for WithProgressTimeout.
//
// Without WithWait, a held lock answers 423 Locked at once; with it, the
// request waits up to that long, then answers 423. A request whose key is
// "" is served without a lock. If the cluster cannot be reached the answer
// is 503. Error bodies are api.ErrorBody JSON. WithRetry retries the
// immediate attempt before answering 423.
func Middleware(c *Client, key func(*http.Request) string, opts ...LockOption) func(http.Handler) http.Handler {
	o := buildOptions(opts)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := key(r)
			if k == "" {
				next.ServeHTTP(w, r)
				return
			}
			var l *Lock
			var err error
			if o.wait > 0 {
				l, err = c.Lock(r.Context(), k, opts...)
			} else {
				l, err = c.TryLock(r.Context(), k, opts...)
			}
			if err != nil {
				status, code := wire.StatusOf(err)
				if errors.Is(err, api.ErrWaitTimeout) {
					// The wait for a held lock ran out: it is still held.
					status, code = http.StatusLocked, api.CodeLocked
				}
				w.Header().Set("Content-Type", wire.ContentTypeJSON)
				w.WriteHeader(status)
				_ = json.NewEncoder(w).Encode(api.ErrorBody{Code: code, Message: err.Error()})
				return
			}
			defer func() {
				// The hold expires by itself if this fails; the handler's
				// answer is already written.
				// Release even if the client went away.
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), c.cfg.RequestTimeout)
				defer cancel()
				if err := l.Unlock(ctx); err != nil {
					c.log.Warn("middleware: unlock failed", "lock", k, "error", err)
				}
			}()
			ctx, cancel := mergeCancel(r.Context(), l.Context())
			defer cancel()
			ctx = context.WithValue(ctx, lockCtxKey{}, l)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

type lockCtxKey struct{}

// LockFromContext returns the Lock that Middleware holds for the request
// whose context ctx is (or descends from), or nil.
func LockFromContext(ctx context.Context) *Lock {
	l, _ := ctx.Value(lockCtxKey{}).(*Lock)
	return l
}

// mergeCancel returns a child of parent that is also cancelled, with
// other's cause, when other ends.
func mergeCancel(parent, other context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}
