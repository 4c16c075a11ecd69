package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A ~traceP variant of a locknode backend (locknode-resp~trace1) runs its
// nodes with tracing on, sampling P % of requests (P may be fractional:
// ~trace0.1), exporting over OTLP/HTTP to a receiver in this process that
// reads and drops every export, as a collector on the same machine would.
// Side by side with the plain backend in one invocation, the variants give
// tracing's overhead (bench/results: tracing-overhead).

// traceVariant returns the --trace-sample-ratio of variant "traceP".
func traceVariant(variant string) (string, bool) {
	p, ok := strings.CutPrefix(variant, "trace")
	if !ok {
		return "", false
	}
	f, err := strconv.ParseFloat(p, 64)
	if err != nil || f < 0 || f > 100 {
		return "", false
	}
	return strconv.FormatFloat(f/100, 'g', -1, 64), true
}

var (
	sinkOnce  sync.Once
	sinkURL   string
	sinkBytes atomic.Int64
	sinkCalls atomic.Int64
)

// otlpSinkURL starts the receiver on first use and returns its base URL.
// It serves until the process exits.
func otlpSinkURL() string {
	sinkOnce.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(fmt.Errorf("lockbench: OTLP receiver: %w", err))
		}
		sinkURL = "http://" + ln.Addr().String()
		// Ends with the process.
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, _ := io.Copy(io.Discard, r.Body)
				sinkBytes.Add(n)
				sinkCalls.Add(1)
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusOK)
			}))
		}()
	})
	return sinkURL
}

// otlpSinkStats describes what the receiver got ("" when unused).
func otlpSinkStats() string {
	if sinkURL == "" {
		return ""
	}
	return fmt.Sprintf("OTLP receiver: %d exports, %d bytes", sinkCalls.Load(), sinkBytes.Load())
}

// backendCore is a backend's name without its variant (~base, ~traceP).
func backendCore(name string) string {
	core, _, _ := strings.Cut(name, "~")
	return core
}
