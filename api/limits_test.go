package api_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
)

// TestValidate: the request types' Validate against the default limits,
// at and just past each limit.
func TestValidate(t *testing.T) {
	l := api.DefaultLimits()
	ok := func() api.AcquireRequest { return api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000} }
	with := func(f func(*api.AcquireRequest)) api.AcquireRequest { r := ok(); f(&r); return r }
	keys := make([]string, api.DefaultMaxKeys+1)
	for i := range keys {
		keys[i] = strings.Repeat("k", i+1)
	}
	tests := []struct {
		name string
		req  interface{ Validate(api.Limits) error }
		want error // nil: accepted
		says string
	}{
		{"acquire ok", ptr(ok()), nil, ""},
		{"ttl max exactly", ptr(with(func(r *api.AcquireRequest) { r.TTLMs = api.DefaultMaxTTLMs })), nil, ""},
		{"ttl above max", ptr(with(func(r *api.AcquireRequest) { r.TTLMs = api.DefaultMaxTTLMs + 1 })), api.ErrLimit, "ttl_ms 86400001 ms is over the limit of 86400000 ms"},
		{"ttl 0", ptr(with(func(r *api.AcquireRequest) { r.TTLMs = 0 })), api.ErrBadRequest, "ttl_ms 0 ms is under the minimum of 1 ms"},
		{"ttl 0 with a session", ptr(with(func(r *api.AcquireRequest) { r.TTLMs, r.Session = 0, "s" })), nil, ""},
		{"ttl negative with a session", ptr(with(func(r *api.AcquireRequest) { r.TTLMs, r.Session = -1, "s" })), api.ErrBadRequest, "ttl_ms -1"},
		{"wait max exactly", ptr(with(func(r *api.AcquireRequest) { r.WaitMs = api.DefaultMaxTTLMs })), nil, ""},
		{"wait overflow", ptr(with(func(r *api.AcquireRequest) { r.WaitMs = 18446744073710 })), api.ErrLimit, "wait_ms 18446744073710"},
		{"max hold int64", ptr(with(func(r *api.AcquireRequest) { r.MaxHoldMs = math.MaxInt64 })), api.ErrLimit, "max_hold_ms"},
		{"lock-delay negative", ptr(with(func(r *api.AcquireRequest) { r.LockDelay = -1 })), api.ErrBadRequest, "lock_delay_ms -1"},
		{"permits max exactly", ptr(with(func(r *api.AcquireRequest) { r.Mode, r.Permits = api.ModeSemaphore, api.DefaultMaxPermits })), nil, ""},
		{"permits above max", ptr(with(func(r *api.AcquireRequest) { r.Mode, r.Permits = api.ModeSemaphore, 1<<40 })), api.ErrLimit, "permits 1099511627776"},
		{"key max exactly", ptr(with(func(r *api.AcquireRequest) { r.Key = strings.Repeat("k", 512) })), nil, ""},
		{"key and keys", ptr(with(func(r *api.AcquireRequest) { r.Keys = []string{"a"} })), api.ErrBadRequest, "not both"},
		{"keys duplicate", ptr(with(func(r *api.AcquireRequest) { r.Key, r.Keys = "", []string{"a", "b", "a"} })), api.ErrBadRequest, `"a" twice`},
		{"keys too many", ptr(with(func(r *api.AcquireRequest) { r.Key, r.Keys = "", keys })), api.ErrLimit, "keys 1025"},
		{"request id oversized", ptr(with(func(r *api.AcquireRequest) { r.RequestID = strings.Repeat("i", 257) })), api.ErrLimit, "request_id of 257 bytes"},
		{"meta ok", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{"host": "h", "pid": "1", "note": ""} })), nil, ""},
		{"meta entries max exactly", ptr(with(func(r *api.AcquireRequest) { r.Meta = metaOf(16, 2, 1) })), nil, ""},
		{"meta entries above max", ptr(with(func(r *api.AcquireRequest) { r.Meta = metaOf(17, 2, 1) })), api.ErrLimit, "meta entries 17 is over the limit of 16"},
		{"meta name max exactly", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{strings.Repeat("n", 64): "v"} })), nil, ""},
		{"meta name above max", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{strings.Repeat("n", 65): "v"} })), api.ErrLimit, "meta name of 65 bytes is over the limit of 64 bytes"},
		{"meta name empty", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{"": "v"} })), api.ErrBadRequest, "meta: empty name"},
		{"meta value max exactly", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{"cmd": strings.Repeat("v", 256)} })), nil, ""},
		{"meta value above max", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{"cmd": strings.Repeat("v", 257)} })), api.ErrLimit, `meta "cmd" value of 257 bytes is over the limit of 256 bytes`},
		{"meta total max exactly", ptr(with(func(r *api.AcquireRequest) { r.Meta = metaOf(8, 2, 126) })), nil, ""},
		{"meta total above max", ptr(with(func(r *api.AcquireRequest) { r.Meta = metaOf(8, 2, 127) })), api.ErrLimit, "meta of 1032 bytes is over the limit of 1024 bytes"},
		{"meta not utf-8", ptr(with(func(r *api.AcquireRequest) { r.Meta = map[string]string{"host": "\xff"} })), api.ErrBadRequest, "not valid UTF-8"},
		{"release forced without owner", &api.ReleaseRequest{Key: "k", Force: true}, nil, ""},
		{"release without owner", &api.ReleaseRequest{Key: "k"}, api.ErrBadRequest, "owner is required"},
		{"extend ttl 0", &api.ExtendRequest{Key: "k", Owner: "o"}, api.ErrBadRequest, "ttl_ms 0"},
		{"session ttl above max", &api.SessionRequest{TTLMs: api.DefaultMaxTTLMs + 1}, api.ErrLimit, "ttl_ms 86400001"},
		{"campaign without session", &api.CampaignRequest{Election: "e", Value: "v"}, api.ErrBadRequest, "session is required"},
		{"resign without value", &api.ResignRequest{Election: "e"}, api.ErrBadRequest, "value is required"},
		{"fence without resource", &api.FenceCheckRequest{Token: 1}, api.ErrBadRequest, "resource is required"},
		{"list above max", &api.ListRequest{Limit: api.MaxListLimit + 1}, api.ErrLimit, "limit 10001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(l)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// metaOf returns n entries with names of nameLen bytes (a distinct
// two-byte tail; nameLen >= 2) and values of valueLen bytes.
func metaOf(n, nameLen, valueLen int) map[string]string {
	m := make(map[string]string, n)
	for i := 0; i < n; i++ {
		name := strings.Repeat("n", nameLen-2) + string(rune('a'+i/26)) + string(rune('a'+i%26))
		m[name] = strings.Repeat("v", valueLen)
	}
	return m
}

func TestLimitsWithDefaults(t *testing.T) {
	if got := (api.Limits{MaxTTLMs: 5}).WithDefaults(); got.MaxTTLMs != 5 || got.MaxKeyBytes != api.DefaultMaxKeyBytes {
		t.Fatalf("%+v", got)
	}
	if err := (api.Limits{MinTTLMs: 10, MaxTTLMs: 5}).WithDefaults().Validate(); err == nil {
		t.Fatal("MaxTTLMs under MinTTLMs accepted")
	}
}

func BenchmarkValidateAcquire(b *testing.B) {
	l := api.DefaultLimits()
	req := api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 10000, WaitMs: 30000, RequestID: "0123456789abcdef0123456789"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := req.Validate(l); err != nil {
			b.Fatal(err)
		}
	}
}
