package oteltrace

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"
)

// A traceparent survives the round trip through the forward RPC's string
// and the HTTP header; a bad one changes nothing; a log line of a
// sampled context names its trace, one of an unsampled context does not.
func TestTraceparentAndLogger(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := WithTraceparent(context.Background(), tp)
	if got := Traceparent(ctx); got != tp {
		t.Fatalf("round trip: %q", got)
	}
	h := http.Header{}
	Inject(ctx, h)
	if h.Get("Traceparent") != tp || Traceparent(Extract(context.Background(), h)) != tp {
		t.Fatalf("header: %v", h)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01"} {
		if sc := trace.SpanContextFromContext(WithTraceparent(context.Background(), bad)); sc.IsValid() {
			t.Errorf("%q gave a span context", bad)
		}
	}
	Inject(context.Background(), h) // nothing to inject: the header stays as it was
	var buf bytes.Buffer
	l := hclog.New(&hclog.LoggerOptions{Output: &buf})
	Logger(ctx, l).Info("traced")
	Logger(WithTraceparent(context.Background(), strings.TrimSuffix(tp, "01")+"00"), l).Info("unsampled")
	out := buf.String()
	if !strings.Contains(out, "trace_id=0af7651916cd43dd8448eb211c80319c") || !strings.Contains(out, "span_id=b7ad6b7169203331") ||
		strings.Contains(out, "unsampled: trace_id") {
		t.Fatalf("log lines:\n%s", out)
	}
}
