package httpapi

import (
	"net/http"
	"slices"
)

// routeMux is the handler's ServeMux. It records every pattern registered
// on it, so Routes lists exactly what the handler serves: the OpenAPI
// document's test compares that list with the document's paths.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func newRouteMux() *routeMux { return &routeMux{ServeMux: http.NewServeMux()} }

// Handle registers h for pattern (http.ServeMux syntax) and records it.
func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers h for pattern (http.ServeMux syntax) and records it.
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Routes returns the patterns ("GET /v1/locks/{key...}", in
// http.ServeMux syntax) of the routes h serves, sorted, when h was made
// by New; nil otherwise. Which optional routes are served depends on the
// Locker and Config given to New (membership, snapshots, metrics, ...).
// The catch-all "/", which answers every unknown path with a JSON 404, is
// left out.
func Routes(h http.Handler) []string {
	var rt *router
	switch h := h.(type) {
	case *router:
		rt = h
	case *measured:
		rt = h.rt
	default:
		return nil
	}
	out := make([]string, 0, len(rt.mux.patterns))
	for _, p := range rt.mux.patterns {
		if p != "/" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
