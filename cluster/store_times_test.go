package cluster

import (
	"testing"
	"time"
)

func TestStoreTimes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type span struct {
		first, last uint64
		at          int
	}
	for _, tt := range []struct {
		name   string
		spans  []span
		apply  uint64
		want   int // seconds after t0; -1: not found
		remain int // spans kept after the lookup
	}{
		{"inside a span", []span{{1, 5, 1}, {6, 9, 2}}, 7, 2, 1},
		{"a span's last entry", []span{{1, 5, 1}, {6, 9, 2}}, 5, 1, 1},
		{"stored again after a conflict: the later store", []span{{1, 5, 1}, {4, 6, 3}}, 4, 3, 2},
		{"never stored here (replayed after a restart)", []span{{10, 12, 1}}, 7, -1, 1},
		{"past every span", []span{{1, 2, 1}}, 9, -1, 0},
		{"nothing recorded", nil, 3, -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s storeTimes
			for _, sp := range tt.spans {
				s.stored(sp.first, sp.last, at(sp.at))
			}
			got, ok := s.applied(tt.apply)
			switch {
			case tt.want < 0 && ok:
				t.Fatalf("found %v, want none", got)
			case tt.want >= 0 && (!ok || !got.Equal(at(tt.want))):
				t.Fatalf("got %v (found %v), want %v", got, ok, at(tt.want))
			}
			if len(s.spans) != tt.remain {
				t.Fatalf("%d spans kept, want %d", len(s.spans), tt.remain)
			}
		})
	}
}

// The record stays bounded when nothing is applied (a leader whose
// followers hold back its commit): the oldest half goes.
func TestStoreTimesBounded(t *testing.T) {
	var s storeTimes
	now := time.Now()
	for i := range uint64(3 * maxStoreSpans) {
		s.stored(i+1, i+1, now)
	}
	if len(s.spans) > maxStoreSpans {
		t.Fatalf("%d spans kept, bound %d", len(s.spans), maxStoreSpans)
	}
	if _, ok := s.applied(3 * maxStoreSpans); !ok {
		t.Fatal("the newest entry's store time was dropped")
	}
}
