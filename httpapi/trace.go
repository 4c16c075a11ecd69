package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// traced makes a server span of each request (Config.TracerProvider): it
// continues the caller's trace when the request carries a W3C
// traceparent, and is a root span, sampled by the provider's sampler,
// otherwise. The span is named by the route, never by the path (a key may
// be in it), and carries no header, body or query: credentials and owner
// tokens travel in those. Probes and metrics scrapes are not traced.
type traced struct {
	next http.Handler
	rt   *router
	tr   trace.Tracer
}

func (h *traced) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && (r.URL.Path == wire.PathLivez || r.URL.Path == wire.PathReadyz || r.URL.Path == wire.PathMetrics) {
		h.next.ServeHTTP(w, r)
		return
	}
	ctx := oteltrace.Extract(r.Context(), r.Header)
	// The sampler needs no name: the route is worked out once the span
	// records, so an unsampled request costs little more than the
	// sampling decision.
	ctx, sp := h.tr.Start(ctx, "HTTP", serverKind)
	if !sp.IsRecording() {
		// Not sampled: nothing beneath would record either.
		h.next.ServeHTTP(w, r)
		return
	}
	defer sp.End()
	var route string
	if r.Method == http.MethodPost && r.URL.RawPath == "" && fastRoute(r.URL.Path) {
		route = "POST " + r.URL.Path
	} else if route = h.rt.pattern(r); route == "/" {
		route = r.Method + " unmatched"
	}
	sp.SetName(route)
	sp.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", routePath(route)))
	sw := &statusWriter{ResponseWriter: w}
	h.next.ServeHTTP(sw, r.WithContext(ctx))
	if sw.code == 0 {
		sw.code = http.StatusOK
	}
	sp.SetAttributes(attribute.Int("http.response.status_code", sw.code))
	if sw.code >= 500 {
		sp.SetStatus(codes.Error, http.StatusText(sw.code))
	}
}

var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// routePath is the path pattern of a route ("POST /v1/locks/try" ->
// "/v1/locks/try").
func routePath(route string) string {
	for i := 0; i < len(route); i++ {
		if route[i] == ' ' {
			return route[i+1:]
		}
	}
	return route
}
