package main

import (
	"github.com/hashicorp/go-hclog"
)

// fdReserve is the file descriptors a node keeps for itself besides its
// three ports' connections: stdio, the listeners, the raft-wal segment
// files and metadata database, snapshot files being written or
// installed, outgoing connections to the other members (RPC, raft
// streams, forwarded HTTP) and the mirror's pool. A cluster of up to 9
// members uses well under it; the rest of the process's limit goes to
// the connection caps.
const fdReserve = 256

// minPeerConns is the least peer-port cap fitCaps leaves: every member
// dials in with a few connections (RPC, raft stream, snapshot install).
const minPeerConns = 32

// fdPlan is the outcome of checking the connection caps against the fd
// limit.
type fdPlan struct {
	Limit, Reserve                 uint64
	OldRESP, OldHTTP, OldPeer      int
	RESP, HTTP, Peer               int
	OldRESPPerAddr, OldHTTPPerAddr int
	RESPPerAddr, HTTPPerAddr       int
	Lowered                        bool
}

// fitCaps lowers the caps of p, for nodes nodes in one process, so that
// their connections plus each node's fdReserve fit in the fd limit; limit
// 0 means unknown (no change). When the limit is below twice the
// reserve, half of it is reserved. The peer cap keeps at least
// minPeerConns (or its own value, if lower); the RESP and HTTP caps share
// the rest in the ratio of their values, at least 1 each. A per-address
// cap over its lowered port cap is scaled with it.
func fitCaps(p *parsedLimits, limit uint64, nodes int) fdPlan {
	pl := fdPlan{Limit: limit,
		OldRESP: p.RESP.MaxConns, OldHTTP: p.HTTP.MaxConns, OldPeer: p.PeerMaxConns,
		OldRESPPerAddr: p.RESP.MaxConnsPerAddr, OldHTTPPerAddr: p.HTTP.MaxConnsPerAddr}
	pl.RESP, pl.HTTP, pl.Peer = pl.OldRESP, pl.OldHTTP, pl.OldPeer
	pl.RESPPerAddr, pl.HTTPPerAddr = pl.OldRESPPerAddr, pl.OldHTTPPerAddr
	if limit == 0 || nodes < 1 {
		return pl
	}
	per := limit / uint64(nodes)
	pl.Reserve = fdReserve
	if per < 2*fdReserve {
		pl.Reserve = per / 2
	}
	avail := int64(per - pl.Reserve)
	if int64(pl.RESP)+int64(pl.HTTP)+int64(pl.Peer) <= avail {
		return pl
	}
	pl.Lowered = true
	pl.Peer = int(min(int64(pl.OldPeer), max(avail/8, minPeerConns)))
	rest := max(avail-int64(pl.Peer), 2)
	clients := int64(pl.OldRESP) + int64(pl.OldHTTP)
	pl.RESP = int(max(rest*int64(pl.OldRESP)/clients, 1))
	pl.HTTP = int(max(rest-int64(pl.RESP), 1))
	scale := func(perAddr, old, now int) int {
		if perAddr <= now || perAddr < 1 {
			return perAddr
		}
		return max(1, int((int64(perAddr)*int64(now)+int64(old)-1)/int64(old)))
	}
	pl.RESPPerAddr = scale(pl.OldRESPPerAddr, pl.OldRESP, pl.RESP)
	pl.HTTPPerAddr = scale(pl.OldHTTPPerAddr, pl.OldHTTP, pl.HTTP)
	p.RESP.MaxConns, p.HTTP.MaxConns, p.PeerMaxConns = pl.RESP, pl.HTTP, pl.Peer
	p.RESP.MaxConnsPerAddr, p.HTTP.MaxConnsPerAddr = pl.RESPPerAddr, pl.HTTPPerAddr
	return pl
}

// fitFDLimit checks p's connection caps against the process's fd limit
// (Go raised the soft limit to the hard one at start) and lowers them
// to fit, logging the numbers with lowered (log.Warn for serve; dev, a
// sandbox on loopback, says it at Info). Where the limit cannot be read
// (not unix) nothing changes.
func fitFDLimit(p *parsedLimits, nodes int, log hclog.Logger, lowered func(msg string, args ...any)) fdPlan {
	limit := fdLimit()
	pl := fitCaps(p, limit, nodes)
	switch {
	case limit == 0:
	case pl.Lowered:
		lowered("connection caps lowered to fit the open-file limit; raise the limit (ulimit -n, LimitNOFILE=) to keep them",
			"fd_limit", pl.Limit, "nodes", nodes, "reserve_per_node", pl.Reserve,
			"resp_max_clients", pl.OldRESP, "resp_max_clients_now", pl.RESP,
			"http_max_conns", pl.OldHTTP, "http_max_conns_now", pl.HTTP,
			"peer_max_conns", pl.OldPeer, "peer_max_conns_now", pl.Peer,
			"resp_max_clients_per_addr_now", pl.RESPPerAddr, "http_max_conns_per_addr_now", pl.HTTPPerAddr)
	default:
		log.Debug("connection caps fit the open-file limit", "fd_limit", pl.Limit, "reserve_per_node", pl.Reserve,
			"resp_max_clients", pl.RESP, "http_max_conns", pl.HTTP, "peer_max_conns", pl.Peer)
	}
	return pl
}
