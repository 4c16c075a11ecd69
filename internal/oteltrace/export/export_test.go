package export

import (
	"context"
	"errors"
	"math"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Off without an endpoint anywhere; on with the flag's or the
// environment's; a bad protocol or ratio is refused and starts nothing.
func TestStartConfig(t *testing.T) {
	ctx := context.Background()
	tr, err := Start(ctx, Config{Getenv: env(nil)})
	if err != nil || tr.Enabled() || tr.TracerProvider() != nil || tr.Shutdown(ctx) != nil {
		t.Fatalf("no endpoint: %+v %v", tr, err)
	}
	for name, c := range map[string]Config{
		"protocol": {Endpoint: "http://127.0.0.1:1", Protocol: "thrift"},
		"ratio":    {Endpoint: "http://127.0.0.1:1", SampleRatio: 1.5},
		"nan":      {Endpoint: "http://127.0.0.1:1", SampleRatio: math.NaN()},
		"env protocol": {Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}), SampleRatio: -1},
	} {
		if c.Getenv == nil {
			c.Getenv = env(nil)
		}
		if _, err := Start(ctx, c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	tr, err = Start(ctx, Config{SampleRatio: -1, Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_TRACES_SAMPLER": "always_on"})})
	if err != nil || !tr.Enabled() || tr.Protocol != ProtocolGRPC || tr.Sampler != "OTEL_TRACES_SAMPLER=always_on" {
		t.Fatalf("from the environment: %+v %v", tr, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	_ = tr.Shutdown(sctx)
	tr, err = Start(ctx, Config{Endpoint: "http://127.0.0.1:1", SampleRatio: -1, Getenv: env(nil)})
	if err != nil || tr.Sampler != "parent-based, ratio 0.01" {
		t.Fatalf("default sampler: %+v %v", tr, err)
	}
	_ = tr.Shutdown(sctx)
}

func TestHTTPTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":             "http://c:4318/v1/traces",
		"http://c:4318/":            "http://c:4318/v1/traces",
		"https://c/otlp/v1/traces":  "https://c/otlp/v1/traces",
		"http://c:4318/custom/path": "http://c:4318/custom/path",
	} {
		if got := httpTracesURL(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
