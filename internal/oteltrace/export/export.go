// Package export sets up the export of locknode's spans the
// OpenTelemetry way: an OTLP exporter (HTTP/protobuf or gRPC), a batch
// span processor and a sampler, configured by the standard OTEL_*
// environment variables and by the few flags of `locknode serve` that
// override the common ones (docs/tracing.md).
//
// Tracing is off unless an OTLP endpoint is set: by Config.Endpoint (the
// --otlp-endpoint flag), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT. The exporter itself reads the endpoint,
// OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE and
// _INSECURE (and their _TRACES_ forms); the SDK reads OTEL_BSP_* and, when
// no ratio is given, OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG;
// the resource reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. The
// protocol (OTEL_EXPORTER_OTLP_PROTOCOL) is read here: the exporters are
// separate packages and choosing between them is the program's job.
package export

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL this package exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultSampleRatio is the share of root spans (requests that arrive
// without a sampled trace context, and every RESP command) sampled when
// neither Config.SampleRatio nor OTEL_TRACES_SAMPLER says otherwise. A
// request whose caller sampled its trace is always recorded.
const DefaultSampleRatio = 0.01

// ErrConfig: the tracing configuration is invalid.
var ErrConfig = errors.New("tracing: invalid configuration")

// Config configures the export. The zero Config exports only if the
// environment names an OTLP endpoint.
type Config struct {
	// Endpoint is the OTLP collector: a URL (http://host:4318, or with
	// a path for HTTP; grpc://host:4317 or http://host:4317 for gRPC).
	// Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT; none of them: tracing is off.
	Endpoint string
	// Protocol is ProtocolHTTP or ProtocolGRPC. Empty:
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, else
	// ProtocolHTTP.
	Protocol string
	// SampleRatio in [0, 1] samples that share of root spans; spans of a
	// caller's trace follow the caller's decision (parent-based). Negative:
	// OTEL_TRACES_SAMPLER(_ARG) when set, else DefaultSampleRatio.
	SampleRatio float64
	// ServiceName names the service of the spans unless OTEL_SERVICE_NAME
	// does. Empty: "locknode".
	ServiceName string
	// InstanceID is the service.instance.id of the spans (the node id).
	InstanceID string
	// Logger receives the exporter's errors (rate-limited). Nil: none.
	Logger hclog.Logger
	// Getenv reads the environment. Nil: os.Getenv.
	Getenv func(string) string
}

// Tracing is the running export. Its zero value (tracing off) is valid.
type Tracing struct {
	tp *sdktrace.TracerProvider
	// Endpoint and Protocol say where spans go ("" when off).
	Endpoint, Protocol string
	// Sampler describes the sampler.
	Sampler string
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// TracerProvider is the provider of the node's spans, or nil when off
// (so the parts that take one make no spans at all).
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return nil
	}
	return t.tp
}

// Shutdown exports the spans still queued (within ctx) and stops.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Start sets up the export cfg and the environment describe, and makes
// it the global provider and W3C trace context the global propagator. It
// returns a Tracing that is off, without error, when no endpoint is set.
func Start(ctx context.Context, cfg Config) (*Tracing, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = firstEnv(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" {
		return &Tracing{}, nil
	}
	proto := cfg.Protocol
	if proto == "" {
		proto = firstEnv(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto == "" {
		proto = ProtocolHTTP
	}
	sampler, sdesc, err := samplerOf(cfg.SampleRatio, getenv)
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch proto {
	case ProtocolHTTP:
		var opts []otlptracehttp.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(httpTracesURL(cfg.Endpoint)))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(strings.Replace(cfg.Endpoint, "grpc://", "http://", 1)))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("%w: OTLP protocol %q: want %s or %s", ErrConfig, proto, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: OTLP exporter: %w", ErrConfig, err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "locknode"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if cfg.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", cfg.InstanceID))
	}
	// The environment's service name and attributes win over ours.
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(attrs...)
	}
	opts := []sdktrace.TracerProviderOption{
		// The batch processor reads OTEL_BSP_* itself.
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	}
	if sampler != nil {
		opts = append(opts, sdktrace.WithSampler(sampler))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if cfg.Logger != nil {
		otel.SetErrorHandler(&errLogger{log: cfg.Logger})
	}
	shown := endpoint
	if cfg.Endpoint == "" {
		shown = "(from the environment) " + endpoint
	}
	return &Tracing{tp: tp, Endpoint: shown, Protocol: proto, Sampler: sdesc}, nil
}

// samplerOf is the sampler of ratio, or nil (the SDK reads
// OTEL_TRACES_SAMPLER itself) when ratio is negative and the variable is
// set.
func samplerOf(ratio float64, getenv func(string) string) (sdktrace.Sampler, string, error) {
	switch {
	case math.IsNaN(ratio) || ratio > 1:
		return nil, "", fmt.Errorf("%w: sample ratio %v: want 0 to 1", ErrConfig, ratio)
	case ratio >= 0:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), fmt.Sprintf("parent-based, ratio %g", ratio), nil
	case getenv("OTEL_TRACES_SAMPLER") != "":
		return nil, "OTEL_TRACES_SAMPLER=" + getenv("OTEL_TRACES_SAMPLER"), nil
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(DefaultSampleRatio)),
		fmt.Sprintf("parent-based, ratio %g", DefaultSampleRatio), nil
}

// httpTracesURL is the OTLP/HTTP traces URL of an endpoint: the base URL
// gets /v1/traces, as OTEL_EXPORTER_OTLP_ENDPOINT does; one with a path
// is taken as it is.
func httpTracesURL(endpoint string) string {
	rest := endpoint
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 && i < len(rest)-1 {
		return endpoint
	}
	return strings.TrimSuffix(endpoint, "/") + "/v1/traces"
}

func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// errLogger logs the SDK's errors (a collector down) at most once a
// minute.
type errLogger struct {
	log  hclog.Logger
	mu   sync.Mutex
	last time.Time
}

func (e *errLogger) Handle(err error) {
	e.mu.Lock()
	quiet := time.Since(e.last) < time.Minute
	if !quiet {
		e.last = time.Now()
	}
	e.mu.Unlock()
	if quiet {
		return
	}
	e.log.Warn("exporting spans failed (said at most once a minute)", "error", err)
}
