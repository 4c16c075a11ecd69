package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPct(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 1..10 is the 5th", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5 * time.Millisecond},
		{"p99 of 1..10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p100 is the max", ms(1, 2, 3), 100, 3 * time.Millisecond},
		{"p0 is the min", ms(1, 2, 3), 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pct(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("pct(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5}, 5},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	xs := []float64{3, 1, 2}
	median(xs)
	if xs[0] != 3 {
		t.Error("median reordered its input")
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/usr/bin/redis-server", "--save", "", "--dir", "/tmp/a b", "it's"})
	want := `/usr/bin/redis-server --save '' --dir '/tmp/a b' 'it'\''s'`
	if got != want {
		t.Fatalf("shellJoin = %s, want %s", got, want)
	}
	if strings.Contains(shellJoin([]string{"a", "b"}), "'") {
		t.Fatal("plain words must not be quoted")
	}
}
