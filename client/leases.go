package client

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// leases is the part of a Client that takes, renews and gives back
// leases and checks fences: the lock calls of api.Locker, one request
// each. Lock handles (handles) and their renewals are built on it.
type leases struct {
	*caller
}

// Acquire implements api.Locker over POST /v1/locks/acquire, a long poll.
// A RequestID is generated when req has none and reused by every retry of
// this call, so a grant whose answer was lost is not granted twice.
//
// With WaitMs 0 it waits until ctx ends: the client asks for at most
// api.MaxWait per request and, when one times out, re-issues it with a
// fresh request id (a timed-out request is a final, definite answer:
// reusing its id would only replay the timeout). Cancelling ctx closes
// the request, which removes the waiter on the server, and returns an
// error wrapping api.ErrCancelled and ctx.Err(). A req that brings its
// own RequestID is sent as given: with WaitMs 0 it then waits at most
// api.MaxWait (ErrWaitTimeout), since one id names one wait.
//
// req.Meta gets this process's host and pid where it has no entry of
// that name, unless Config.NoDefaultMetadata or ctx says not to
// (api.WithoutDefaultMeta).
func (c *leases) Acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	ctx, sp := startSpan(ctx, "locknode.Acquire", reqAttrs(req.Key, req.Keys), oteltrace.AttrWaitMs.Int64(req.WaitMs))
	req.Meta = c.defaultMeta(ctx, req.Meta)
	lease, _, err := c.acquire(ctx, req)
	sp.endLease(lease, err)
	return lease, err
}

// defaultMeta is meta with this process's host and pid, when wanted.
func (c *leases) defaultMeta(ctx context.Context, meta map[string]string) map[string]string {
	if c.cfg.NoDefaultMetadata || api.DefaultMetaOff(ctx) {
		return meta
	}
	return c.cfg.Limits.WithProcessMeta(meta)
}

// acquire also returns the send time of the request that won the lease.
func (c *leases) acquire(ctx context.Context, req api.AcquireRequest) (api.Lease, time.Time, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.Lease{}, time.Time{}, err
	}
	forever := req.WaitMs == 0
	waitEnd := time.Now().Add(time.Duration(req.WaitMs) * time.Millisecond)
	fixedID := req.RequestID != ""
	for {
		if !fixedID {
			req.RequestID = newID()
		}
		remaining := func() time.Duration {
			if !forever {
				return max(time.Until(waitEnd), time.Millisecond)
			}
			w := api.MaxWait
			if dl, ok := ctx.Deadline(); ok {
				w = min(w, max(time.Until(dl), time.Millisecond))
			}
			return w
		}
		var lease api.Lease
		sent, err := c.do(ctx, call{
			op: "acquire", method: http.MethodPost, path: wire.PathAcquire,
			body: func() any {
				r := req
				r.WaitMs = remaining().Milliseconds()
				return &r
			},
			wait: remaining(),
			out:  &lease,
		})
		if forever && !fixedID && errors.Is(err, api.ErrWaitTimeout) && ctx.Err() == nil {
			continue
		}
		return lease, sent, err
	}
}

// TryAcquire implements api.Locker over POST /v1/locks/try. req.Meta
// gets the default metadata as with Acquire.
func (c *leases) TryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	ctx, sp := startSpan(ctx, "locknode.TryAcquire", reqAttrs(req.Key, req.Keys))
	req.Meta = c.defaultMeta(ctx, req.Meta)
	lease, _, err := c.tryAcquire(ctx, req)
	sp.endLease(lease, err)
	return lease, err
}

func (c *leases) tryAcquire(ctx context.Context, req api.AcquireRequest) (api.Lease, time.Time, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.Lease{}, time.Time{}, err
	}
	if req.RequestID == "" {
		req.RequestID = newID()
	}
	var lease api.Lease
	sent, err := c.do(ctx, call{op: "try", method: http.MethodPost, path: wire.PathTry, body: jsonBody(&req), out: &lease})
	return lease, sent, err
}

// Release implements api.Locker (exactly-once: see Acquire).
func (c *leases) Release(ctx context.Context, req api.ReleaseRequest) (_ api.ReleaseResult, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Release", reqAttrs(req.Key, req.Keys))
	defer func() { sp.end(rerr) }()
	return c.release(ctx, req)
}

func (c *leases) release(ctx context.Context, req api.ReleaseRequest) (api.ReleaseResult, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.ReleaseResult{}, err
	}
	if req.RequestID == "" {
		req.RequestID = newID()
	}
	var res api.ReleaseResult
	_, err := c.do(ctx, call{op: "release", method: http.MethodPost, path: wire.PathRelease, body: jsonBody(&req), out: &res})
	return res, err
}

// Extend implements api.Locker (exactly-once: see Acquire).
func (c *leases) Extend(ctx context.Context, req api.ExtendRequest) (_ api.Lease, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Extend", reqAttrs(req.Key, req.Keys))
	defer func() { sp.end(rerr) }()
	lease, _, err := c.extend(ctx, req)
	return lease, err
}

func (c *leases) extend(ctx context.Context, req api.ExtendRequest) (api.Lease, time.Time, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.Lease{}, time.Time{}, err
	}
	if req.RequestID == "" {
		req.RequestID = newID()
	}
	var lease api.Lease
	sent, err := c.do(ctx, call{op: "extend", method: http.MethodPost, path: wire.PathExtend, body: jsonBody(&req), out: &lease})
	return lease, sent, err
}

// FenceCheck implements api.Locker.
func (c *leases) FenceCheck(ctx context.Context, resource string, token uint64) (_ api.FenceResult, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.FenceCheck", attribute.String("locknode.resource", resource), oteltrace.AttrFence.Int64(int64(token)))
	defer func() { sp.end(rerr) }()
	freq := api.FenceCheckRequest{Resource: resource, Token: token}
	if err := freq.Validate(c.cfg.Limits); err != nil {
		return api.FenceResult{}, err
	}
	var res api.FenceResult
	_, err := c.do(ctx, call{op: "fence check", method: http.MethodPost, path: wire.PathFenceCheck,
		body: jsonBody(freq), out: &res})
	return res, err
}
