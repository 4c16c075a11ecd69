package main

import (
	"math"
	"slices"
	"sort"
	"time"
)

// pct returns the p-th percentile (0..100) of sorted samples, nearest rank.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyMetrics adds prefix_p50_ms, prefix_p99_ms, prefix_p999_ms (99.9th)
// and prefix_max_ms.
func latencyMetrics(m map[string]float64, prefix string, samples []time.Duration) {
	s := slices.Clone(samples)
	slices.Sort(s)
	m[prefix+"_p50_ms"] = ms(pct(s, 50))
	m[prefix+"_p99_ms"] = ms(pct(s, 99))
	m[prefix+"_p999_ms"] = ms(pct(s, 99.9))
	m[prefix+"_max_ms"] = ms(pct(s, 100))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
