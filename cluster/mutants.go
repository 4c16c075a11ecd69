package cluster

import "time"

// mutantAnchor reports whether setApplied moves the clock anchor to the
// entry at time now, as it would: always, unless one of the planted bugs that
// bring back an earlier anchor rule is on (mutants_on.go; for the
// simulator's mutation check, never in a release build). Caller holds
// appliedMu.
//   - "anchor-largest-bound": the anchor giving the largest bound is kept,
//     so a fast clock carries its bound ahead without limit (leases ended
//     early after a fast follower was elected; fixed by the anchor's
//     maximum age).
//   - "anchor-max-age": that rule with the maximum age and its rate
//     slack, on apply times (a slow leader's clock still made a new
//     leader end leases early; fixed by always anchoring at the latest
//     entry, as of when it was stored).
func mutantAnchor(n *Node, now int64, force bool) bool {
	largest, maxAge := mutant("anchor-largest-bound"), mutant("anchor-max-age")
	if force || n.lastApplyTime == 0 || !largest && !maxAge {
		return true
	}
	mono := n.clock.Now() // the apply time, as before store times
	age := mono.Sub(n.lastApplyMono)
	if now > n.lastApplyTime+age.Milliseconds() {
		n.lastApplyTime, n.lastApplyMono = now, mono
		return false
	}
	limit := time.Second
	if n.cfg.ClockSyncInterval > 0 {
		limit = n.cfg.ClockSyncInterval
	}
	if maxAge && age > limit && float64(now) >= float64(n.lastApplyTime)+float64(age.Milliseconds())*0.9 {
		n.lastApplyTime, n.lastApplyMono = now, mono
	}
	return false
}
