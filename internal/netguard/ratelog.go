package netguard

import (
	"sync/atomic"
	"time"
)

// RateLog lets one log line of a kind through per Every and counts the
// ones it holds back. The zero value with Every set is ready; it is safe
// for concurrent use and never blocks.
type RateLog struct {
	Every      time.Duration
	last       atomic.Int64 // unix nanoseconds of the last line let through
	suppressed atomic.Int64
}

// Allow reports whether a line may be logged now, and how many were held
// back since the last one that was.
func (r *RateLog) Allow() (ok bool, suppressed int64) {
	now := time.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(r.Every) || !r.last.CompareAndSwap(last, now) {
		r.suppressed.Add(1)
		return false, 0
	}
	return true, r.suppressed.Swap(0)
}
