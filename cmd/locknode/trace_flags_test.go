package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	flag "github.com/spf13/pflag"
)

// The trace flags refuse a bad ratio or protocol before anything starts,
// and leave tracing off without an endpoint.
func TestTraceFlags(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
	parse := func(args ...string) *traceFlags {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f := addTraceFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	log := hclog.NewNullLogger()
	tr, err := parse().start(ctx, "n1", log)
	if err != nil || tr.Enabled() {
		t.Fatalf("no endpoint: %v %v", tr.Enabled(), err)
	}
	for args, want := range map[string]string{
		"--otlp-endpoint=http://127.0.0.1:1 --trace-sample-ratio=2":    "--trace-sample-ratio",
		"--otlp-endpoint=http://127.0.0.1:1 --trace-sample-ratio=x":    "--trace-sample-ratio",
		"--otlp-endpoint=http://127.0.0.1:1 --otlp-protocol=http/json": "OTLP protocol",
	} {
		if _, err := parse(strings.Fields(args)...).start(ctx, "n1", log); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", args, err, want)
		}
	}
	tr, err = parse("--otlp-endpoint=http://127.0.0.1:1", "--trace-sample-ratio=0.5").start(ctx, "n1", log)
	if err != nil || !tr.Enabled() || tr.TracerProvider() == nil || !strings.Contains(tr.Sampler, "0.5") {
		t.Fatalf("endpoint set: %+v %v", tr, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = tr.Shutdown(cctx)
}
