package redisbridge

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/locknode/locknode/auth"
)

// Each command is a root span named by the command, with its name and
// argument count and nothing of its arguments: no AUTH password, no
// value, no owner token reaches a span.
func TestCommandSpansCarryNoArguments(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	us, err := auth.Parse(strings.NewReader("user root on >s3cret-pass ~* &* +@all\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, Config{Users: auth.NewStoreFrom(us, nil), Audit: auth.NewAudit(nil), TracerProvider: tp})
	c := dialRaw(t, s)
	for _, cmd := range [][]string{
		{"AUTH", "root", "s3cret-pass"},
		{"SET", "k", "s3cret-value"},
		{"LOCK.ACQUIRE", "lk", "s3cret-owner", "10000"},
		{"LOCK.RELEASE", "lk", "s3cret-owner"},
	} {
		if v := c.do(cmd...); v.Type == '-' {
			t.Fatalf("%v: %s", cmd[0], v.Str)
		}
	}
	want := map[string]bool{"RESP AUTH": false, "RESP SET": false, "RESP LOCK.ACQUIRE": false, "RESP LOCK.RELEASE": false}
	for _, sp := range exp.GetSpans() {
		if _, ok := want[sp.Name]; ok {
			want[sp.Name] = true
		}
		if sp.Parent.IsValid() {
			t.Errorf("%s has a parent: a command's span is a root", sp.Name)
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), "s3cret") {
				t.Errorf("span %s: attribute %s carries an argument: %q", sp.Name, a.Key, a.Value.String())
			}
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no span %s", name)
		}
	}
}
