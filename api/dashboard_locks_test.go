package api_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
)

// TestWaitBucketLabels: every bucket reads as a range, the edges fall in
// the bucket above them, and the open bucket past the last edge.
func TestWaitBucketLabels(t *testing.T) {
	tests := []struct {
		waitMs int64
		label  string
	}{
		{0, "< 1 ms"},
		{1, "1–2 ms"},
		{4, "2–5 ms"},
		{9, "5–10 ms"},
		{10, "10–25 ms"},
		{24, "10–25 ms"},
		{300, "250–500 ms"},
		{999, "500 ms–1 s"},
		{1000, "1–2.5 s"},
		{2500, "2.5–5 s"},
		{9999, "5–10 s"},
		{10000, "> 10 s"},
		{86400000, "> 10 s"},
	}
	for _, tc := range tests {
		if got := api.WaitBucketLabel(api.WaitBucket(tc.waitMs)); got != tc.label {
			t.Errorf("wait %d ms: bucket %q, want %q", tc.waitMs, got, tc.label)
		}
	}
	labels := api.WaitBucketLabels()
	if len(labels) != api.WaitBuckets {
		t.Fatalf("%d labels for %d buckets", len(labels), api.WaitBuckets)
	}
	seen := map[string]bool{}
	for i, l := range labels {
		if l == "" || seen[l] {
			t.Errorf("bucket %d label %q empty or repeated", i, l)
		}
		seen[l] = true
	}
	for _, b := range []int{-1, api.WaitBuckets} {
		if got := api.WaitBucketLabel(b); got != "" {
			t.Errorf("bucket %d: %q, want none", b, got)
		}
	}
}

func TestParseMetaTerm(t *testing.T) {
	tests := []struct {
		in   string
		want api.MetaTerm
		err  bool
	}{
		{"host=build-7", api.MetaTerm{Name: "host", Value: "build-7", HasValue: true}, false},
		{"host", api.MetaTerm{Name: "host"}, false},
		{"host=", api.MetaTerm{Name: "host", HasValue: true}, false}, // an empty value exactly
		{"url=a=b", api.MetaTerm{Name: "url", Value: "a=b", HasValue: true}, false},
		{" host =x", api.MetaTerm{Name: "host", Value: "x", HasValue: true}, false},
		{"=x", api.MetaTerm{}, true},
		{"", api.MetaTerm{}, true},
	}
	for _, tc := range tests {
		got, err := api.ParseMetaTerm(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%q: %v is not ErrBadRequest", tc.in, err)
		}
	}
}

// TestLockFilter: each state, owner and metadata condition alone and
// together, against free, held, queued and shared locks.
func TestLockFilter(t *testing.T) {
	meta := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	free := api.LockInfo{Key: "free"}
	delayed := api.LockInfo{Key: "delayed", Waiters: []api.Waiter{{Owner: "w"}}, LockDelayMs: 500}
	held := api.LockInfo{Key: "held", Holders: []api.Holder{{Owner: "a", Meta: meta("host", "h1", "pid", "1")}}}
	queued := api.LockInfo{Key: "queued", Holders: []api.Holder{{Owner: "b", Meta: meta("host", "h2")}},
		Waiters: []api.Waiter{{Owner: "c", Meta: meta("host", "h1")}}}
	shared := api.LockInfo{Key: "shared", Holders: []api.Holder{
		{Owner: "r1", Meta: meta("host", "h1")}, {Owner: "r2", Meta: meta("pid", "2")}}}
	all := []api.LockInfo{free, delayed, held, queued, shared}
	term := func(s string) api.MetaTerm { m, _ := api.ParseMetaTerm(s); return m }
	tests := []struct {
		name   string
		filter api.LockFilter
		want   string
	}{
		{"no filter", api.LockFilter{}, "free delayed held queued shared"},
		{"all", api.LockFilter{State: api.StateAll}, "free delayed held queued shared"},
		{"held", api.LockFilter{State: api.StateHeld}, "held queued shared"},
		{"free", api.LockFilter{State: api.StateFree}, "free delayed"},
		{"with waiters, held or not", api.LockFilter{State: api.StateWaiters}, "delayed queued"},
		{"contended: held with waiters", api.LockFilter{State: api.StateContended}, "queued"},
		{"owner", api.LockFilter{Owner: "r2"}, "shared"},
		{"owner is a holder, not a waiter", api.LockFilter{Owner: "c"}, ""},
		{"meta value", api.LockFilter{Meta: []api.MetaTerm{term("host=h1")}}, "held shared"},
		{"meta name only", api.LockFilter{Meta: []api.MetaTerm{term("pid")}}, "held shared"},
		{"meta terms on one holder", api.LockFilter{Meta: []api.MetaTerm{term("host=h1"), term("pid")}}, "held"},
		{"meta value is exact", api.LockFilter{Meta: []api.MetaTerm{term("host=h")}}, ""},
		{"meta and owner on one holder", api.LockFilter{Owner: "r2", Meta: []api.MetaTerm{term("host=h1")}}, ""},
		{"state and meta", api.LockFilter{State: api.StateContended, Meta: []api.MetaTerm{term("host=h2")}}, "queued"},
	}
	for _, tc := range tests {
		var got []string
		for i := range all {
			if tc.filter.Match(&all[i]) {
				got = append(got, all[i].Key)
			}
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s: matched %q, want %q", tc.name, s, tc.want)
		}
	}
}

func TestLockFilterValidate(t *testing.T) {
	l := api.DefaultLimits()
	many := make([]api.MetaTerm, api.MaxMetaTerms+1)
	for i := range many {
		many[i] = api.MetaTerm{Name: "k"}
	}
	tests := []struct {
		name   string
		filter api.LockFilter
		want   error
		says   string
	}{
		{"empty", api.LockFilter{}, nil, ""},
		{"each state", api.LockFilter{State: api.StateContended}, nil, ""},
		{"unknown state lists the states", api.LockFilter{State: "busy"}, api.ErrBadRequest, "want one of all, held, free, waiters, contended"},
		{"owner too long", api.LockFilter{Owner: strings.Repeat("o", l.MaxOwnerBytes+1)}, api.ErrLimit, "owner of"},
		{"too many terms", api.LockFilter{Meta: many}, api.ErrLimit, "meta filters is over the limit of 16"},
		{"empty name", api.LockFilter{Meta: []api.MetaTerm{{Value: "x", HasValue: true}}}, api.ErrBadRequest, "empty name"},
		{"long name", api.LockFilter{Meta: []api.MetaTerm{{Name: strings.Repeat("n", l.MaxMetaKeyBytes+1)}}}, api.ErrLimit, "meta filter name"},
		{"long value", api.LockFilter{Meta: []api.MetaTerm{{Name: "n", Value: strings.Repeat("v", l.MaxMetaValueBytes+1), HasValue: true}}}, api.ErrLimit, "value of"},
	}
	for _, tc := range tests {
		err := tc.filter.Validate(l)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
}

// TestLockTally: the totals of a set, sessions counted once however many
// holds they carry.
func TestLockTally(t *testing.T) {
	locks := []api.LockInfo{
		{Key: "free"},
		{Key: "delayed", Waiters: []api.Waiter{{Owner: "w"}}},
		{Key: "a", Holders: []api.Holder{{Owner: "o", Session: "s1"}}, Waiters: []api.Waiter{{Owner: "x"}, {Owner: "y"}}},
		{Key: "b", Holders: []api.Holder{{Owner: "o", Session: "s1"}, {Owner: "p", Session: "s2"}, {Owner: "q"}}},
	}
	var tl api.LockTally
	for i := range locks {
		tl.Add(&locks[i])
	}
	want := api.LockTotals{Locks: 4, Held: 2, Holders: 4, Waiters: 3, Contended: 1, Sessions: 2}
	if tl.LockTotals != want {
		t.Fatalf("totals %+v, want %+v", tl.LockTotals, want)
	}
}
