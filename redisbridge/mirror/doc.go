// Package mirror keeps an external Redis in step with a locknode
// cluster's lock table, so readers that stay on Redis (dashboards, legacy
// `GET lock:x`, SET NX clients pointed at it) see the cluster's locks.
//
// The external Redis is a read replica: nothing in the cluster waits for
// it, and the cluster works when it is down. Every node runs a Mirror over
// its own Source (a *cluster.Node); only the leader's writes. See Mirror
// for how it stays ordered and correct across Redis restarts, queue
// overflow and leader changes.
//
// A `--mirror` flag value becomes a Config with ParseURL; New(cfg, node)
// then builds the Mirror, run with `go m.Run(ctx)`. Status, InfoText (an
// INFO section, for redisbridge.Config.ExtraInfo) and Collectors report it.
package mirror
