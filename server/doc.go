// Package server assembles one locknode node from a Config: the raft
// node (package cluster) and around it the HTTP API, /metrics and
// /readyz, the RESP bridge, the Redis mirror, the connection limits, the
// authentication throttle, the audit and the build metrics. It is the one
// place that wires them: cmd/locknode turns its flags into a Config, and
// testcluster and programs embedding a node use it as they are.
//
// Using it:
//
//  1. Start from DefaultConfig (or the zero Config, which serves no
//     client port), set Cluster.ID and Cluster.DataDir, and Bootstrap,
//     Peers or Join as cluster.Config describes.
//  2. Start it: it listens on the client ports first (a taken port fails
//     before raft starts), starts the node, then the servers, then joins.
//  3. Use Node for the embedded api.Locker, HTTPAddr and RESPAddr for the
//     bound ports.
//  4. Close it: the servers stop (HTTP requests in flight get
//     Config.ShutdownTimeout), then the mirror, then the node, which hands
//     leadership over first. Kill stops everything at once, as a crash.
//
// The network is a seam: Config.Listen opens every listener (the peer
// port's too when Cluster.Transport is nil) and Config.Dial the peer
// connections, so a test or a simulation can plug its own in.
package server
