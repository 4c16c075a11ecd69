package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/internal/oteltrace/export"
)

// traceFlags are serve's OpenTelemetry flags (docs/tracing.md); the
// standard OTEL_* variables configure the rest.
type traceFlags struct {
	endpoint, protocol, ratio *string
}

func addTraceFlags(fs *flag.FlagSet) *traceFlags {
	return &traceFlags{
		endpoint: fs.String("otlp-endpoint", envDefault("LOCKNODE_OTLP_ENDPOINT", ""),
			"export OpenTelemetry traces to this OTLP collector URL (http://host:4318; grpc://host:4317 with --otlp-protocol grpc); "+
				"default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, and tracing off when none is set"),
		protocol: fs.String("otlp-protocol", envDefault("LOCKNODE_OTLP_PROTOCOL", ""),
			"OTLP protocol: http/protobuf or grpc (default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)"),
		ratio: fs.String("trace-sample-ratio", envDefault("LOCKNODE_TRACE_SAMPLE_RATIO", ""),
			"share of requests without a sampled caller trace (and of RESP commands) that are traced, 0 to 1; "+
				"requests whose caller sampled its trace are always traced (default: OTEL_TRACES_SAMPLER when set, else 0.01)"),
	}
}

// start sets the export up (off when no endpoint is set anywhere) and
// logs where spans go.
func (f *traceFlags) start(ctx context.Context, id string, log hclog.Logger) (*export.Tracing, error) {
	ratio := -1.0
	if s := strings.TrimSpace(*f.ratio); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
			return nil, fmt.Errorf("--trace-sample-ratio %q: want a number from 0 to 1", *f.ratio)
		}
		ratio = r
	}
	t, err := export.Start(ctx, export.Config{
		Endpoint: strings.TrimSpace(*f.endpoint), Protocol: strings.TrimSpace(*f.protocol),
		SampleRatio: ratio, InstanceID: id, Logger: log.Named("otel"),
	})
	if err != nil {
		return nil, err
	}
	if t.Enabled() {
		log.Info("exporting traces", "endpoint", t.Endpoint, "protocol", t.Protocol, "sampler", t.Sampler)
	}
	return t, nil
}
