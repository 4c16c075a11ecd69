package lockservice

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/oteltrace"
)

// The lock service's spans (docs/tracing.md): locknode.acquire and
// locknode.wait, with a link to the release that handed the lock over.

// maxHandoffLinks bounds the registry; past it the finished releases are
// forgotten.
const maxHandoffLinks = 4096

// handoffLinks is the hand-off registry: the span of each key's last
// traced release through this replica, and the entry that applied it.
type handoffLinks struct {
	mu sync.Mutex
	m  map[string]handoff
}

type handoff struct {
	sc    trace.SpanContext
	index uint64 // the release's entry; 0 while it is under way
}

// begin registers the span of a release of keys under way; end records
// the entry that applied it (0: it failed). A waiter granted by that
// entry, or while the release is under way, links to it.
func (h *handoffLinks) begin(keys []string, sc trace.SpanContext) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]handoff)
	}
	if len(h.m) >= maxHandoffLinks {
		for k, e := range h.m {
			if e.index != 0 {
				delete(h.m, k)
			}
		}
	}
	for _, k := range keys {
		h.m[k] = handoff{sc: sc}
	}
}

func (h *handoffLinks) end(keys []string, sc trace.SpanContext, index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if e, ok := h.m[k]; ok && e.sc.Equal(sc) {
			if index == 0 {
				delete(h.m, k)
			} else {
				h.m[k] = handoff{sc: sc, index: index}
			}
		}
	}
}

// lookup returns the span of the release of key that the entry at index
// applied, as far as this replica knows it.
func (h *handoffLinks) lookup(key string, index uint64) (trace.SpanContext, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[key]
	if !ok || (e.index != 0 && e.index != index) {
		return trace.SpanContext{}, false
	}
	return e.sc, true
}

// spanKeys is a request's keys: Keys, or Key alone.
func spanKeys(key string, keys []string) []string {
	if len(keys) > 0 {
		return keys
	}
	return []string{key}
}

// keyAttr is the attribute of a request's key(s).
func keyAttr(key string, keys []string) attribute.KeyValue {
	if len(keys) > 0 {
		return oteltrace.AttrKeys.String(strings.Join(keys, ","))
	}
	return oteltrace.AttrKey.String(key)
}

// holderAttrs describes the holders of key that a waiter queued behind:
// the first holder's fence and metadata, and how many hold it.
func holderAttrs(t *fsm.Table, key string, now int64) []attribute.KeyValue {
	li, err := t.Inspect(key, now)
	if err != nil || len(li.Holders) == 0 {
		return nil
	}
	h := li.Holders[0]
	out := []attribute.KeyValue{
		oteltrace.AttrHolders.Int(len(li.Holders)),
		attribute.Int64(oteltrace.AttrHolderPfx+"fence", int64(h.Fence)),
		attribute.String(oteltrace.AttrHolderPfx+"mode", h.Mode.String()),
	}
	if h.Granted > 0 && now >= h.Granted {
		out = append(out, attribute.Int64(oteltrace.AttrHolderPfx+"held_ms", now-h.Granted))
	}
	for _, e := range h.Meta {
		out = append(out, attribute.String(oteltrace.AttrHolderPfx+"meta."+e.Name, e.Value))
	}
	return out
}

// acquireTraced is Acquire under a span of its own: the key, the mode,
// and once answered the outcome, the fence and how long it waited.
func (s *Service) acquireTraced(ctx context.Context, req api.AcquireRequest) (api.Lease, error) {
	mode := req.Mode
	if mode == "" {
		mode = "exclusive"
	}
	ctx, sp := oteltrace.Child(ctx, "locknode.acquire", trace.WithAttributes(keyAttr(req.Key, req.Keys),
		oteltrace.AttrMode.String(mode), oteltrace.AttrWaitMs.Int64(req.WaitMs), oteltrace.AttrTTLMs.Int64(req.TTLMs)))
	defer sp.End()
	l, err := s.acquire(ctx, req)
	switch {
	case err == nil:
		sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeGranted),
			oteltrace.AttrFence.Int64(int64(l.Fence)), oteltrace.AttrWaitedMs.Int64(l.WaitedMs))
	case errors.Is(err, api.ErrWaitTimeout):
		sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeTimeout))
	case errors.Is(err, api.ErrCancelled):
		sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeCanceled))
	default:
		sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeError))
		oteltrace.Fail(sp, err)
	}
	return l, err
}

// waitSpan is the span of a queued acquire's wait (nil: not traced).

type waitSpan struct{ sp trace.Span }

// startWait starts the span of an acquire queued behind other holders,
// with the first holder's fence and metadata as this replica's table
// shows them now.
func (s *Service) startWait(ctx context.Context, req api.AcquireRequest) *waitSpan {
	if !s.traced || oteltrace.Recording(ctx) == nil {
		return nil
	}
	_, sp := oteltrace.Child(ctx, "locknode.wait", trace.WithAttributes(keyAttr(req.Key, req.Keys)))
	key := req.Key
	if len(req.Keys) > 0 {
		key = req.Keys[0]
	}
	_ = s.r.Read(ctx, true, func(t *fsm.Table, now int64) {
		sp.SetAttributes(holderAttrs(t, key, now)...)
	})
	return &waitSpan{sp: sp}
}

// outcome records how the wait ended, and links the release that handed
// the lock over when it ran through this replica.
func (w *waitSpan) outcome(s *Service, req api.AcquireRequest, index uint64, l api.Lease, err error) {
	if w == nil {
		return
	}
	if err != nil {
		w.sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeError))
		oteltrace.Fail(w.sp, err)
		return
	}
	w.sp.SetAttributes(oteltrace.AttrOutcome.String(oteltrace.OutcomeGranted),
		oteltrace.AttrFence.Int64(int64(l.Fence)), oteltrace.AttrWaitedMs.Int64(l.WaitedMs))
	for _, k := range spanKeys(req.Key, req.Keys) {
		if sc, ok := s.handoffs.lookup(k, index); ok && sc.IsValid() {
			w.sp.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("locknode.link", "released_by")}})
			break
		}
	}
}

func (w *waitSpan) end() {
	if w != nil {
		w.sp.End()
	}
}
