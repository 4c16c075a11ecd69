package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeMetrics counts requests by route (the mux pattern that served
// them, so the label set is bounded by the routes, never by keys or
// garbage paths) and status code, and times them by route.
type routeMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu    sync.RWMutex
	cache map[routeCode]prometheus.Counter
	hists map[string]prometheus.Observer
}

type routeCode struct {
	route string
	code  int
}

func newRouteMetrics(reg prometheus.Registerer) (*routeMetrics, error) {
	m := &routeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "locknode_http_request_duration_seconds",
			Help:    "Time from a request's header to its answer, by route pattern (blocking acquires and blocking queries include their wait).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		cache: make(map[routeCode]prometheus.Counter),
		hists: make(map[string]prometheus.Observer),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *routeMetrics) observe(route string, code int, d time.Duration) {
	k := routeCode{route, code}
	m.mu.RLock()
	c, ok := m.cache[k]
	h, hok := m.hists[route]
	m.mu.RUnlock()
	if !ok || !hok {
		m.mu.Lock()
		if c, ok = m.cache[k]; !ok {
			c = m.requests.WithLabelValues(route, strconv.Itoa(code))
			m.cache[k] = c
		}
		if h, hok = m.hists[route]; !hok {
			h = m.duration.WithLabelValues(route)
			m.hists[route] = h
		}
		m.mu.Unlock()
	}
	c.Inc()
	h.Observe(d.Seconds())
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps streaming answers (observe) streaming.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// SetReadDeadline keeps the body timeout's fast path (setReadDeadline).
func (w *statusWriter) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(w.ResponseWriter).SetReadDeadline(t)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// measured wraps the router with routeMetrics.
type measured struct {
	rt *router
	m  *routeMetrics
}

func (h *measured) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var route string
	if r.Method == http.MethodPost && r.URL.RawPath == "" && fastRoute(r.URL.Path) {
		route = "POST " + r.URL.Path
	} else if route = h.rt.pattern(r); route == "/" {
		route = "unmatched"
	}
	sw := &statusWriter{ResponseWriter: w}
	h.rt.ServeHTTP(sw, r)
	if sw.code == 0 {
		sw.code = http.StatusOK
	}
	h.m.observe(route, sw.code, time.Since(start))
}
