package redisbridge

import (
	"strconv"
	"strings"

	"github.com/locknode/locknode/redisbridge/resp"
)

// SENTINEL: every node answers as a Sentinel whose master is a live node
// (itself, which forwards writes to the raft leader), so Sentinel-aware
// clients (go-redis FailoverClient, ioredis, redis-py Sentinel) find a
// node and fail over to another one with standard configuration.
//
//	SENTINEL GET-MASTER-ADDR-BY-NAME <any name> -> [host, port] of this node
//	SENTINEL MASTERS | MASTER <name>            -> this node as master Config.MasterName
//	SENTINEL SENTINELS <name>                   -> the other live members
//	SENTINEL REPLICAS|SLAVES <name>             -> empty: no node is a replica
//	SENTINEL IS-MASTER-DOWN-BY-ADDR ...         -> [0, "*", 0]
func cmdSentinel(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	arity := map[string]int{
		"get-master-addr-by-name": 3, "masters": 2, "master": 3, "sentinels": 3,
		"replicas": 3, "slaves": 3, "is-master-down-by-addr": 6, "myid": 2,
	}
	want, ok := arity[sub]
	if !ok {
		c.w.WriteError("ERR Unknown sentinel subcommand '" + string(clip(args[1])) + "'")
		return
	}
	if len(args) != want {
		c.w.WriteError(errArity("sentinel|" + sub))
		return
	}
	self := c.selfAddr()
	host, port := splitHostPort(self)
	switch sub {
	case "get-master-addr-by-name":
		c.w.WriteArrayLen(2)
		c.w.WriteBulkString(host)
		c.w.WriteBulkString(port)
	case "masters":
		c.w.WriteArrayLen(1)
		c.writeMasterState(host, port)
	case "master":
		c.writeMasterState(host, port)
	case "sentinels":
		var others []string
		for _, p := range c.s.peers(self) {
			if p != self {
				others = append(others, p)
			}
		}
		c.w.WriteArrayLen(len(others))
		for _, p := range others {
			h, pt := splitHostPort(p)
			writeFields(c.w, [][2]string{
				{"name", p}, {"ip", h}, {"port", pt}, {"runid", runIDFor(p)},
				{"flags", "sentinel"}, {"link-pending-commands", "0"}, {"link-refcount", "1"},
				{"last-ping-sent", "0"}, {"last-ok-ping-reply", "0"}, {"last-ping-reply", "0"},
				{"down-after-milliseconds", "30000"}, {"last-hello-message", "0"},
				{"voted-leader", "?"}, {"voted-leader-epoch", "0"},
			})
		}
	case "replicas", "slaves":
		c.w.WriteArrayLen(0)
	case "is-master-down-by-addr":
		c.w.WriteArrayLen(3)
		c.w.WriteInt(0)
		c.w.WriteBulkString("*")
		c.w.WriteInt(0)
	case "myid":
		c.w.WriteBulkString(c.s.cfg.RunID)
	}
}

func (c *conn) writeMasterState(host, port string) {
	others := len(c.s.peers(c.selfAddr())) - 1
	quorum := others/2 + 1
	writeFields(c.w, [][2]string{
		{"name", c.s.cfg.MasterName}, {"ip", host}, {"port", port}, {"runid", c.s.cfg.RunID},
		{"flags", "master"}, {"link-pending-commands", "0"}, {"link-refcount", "1"},
		{"last-ping-sent", "0"}, {"last-ok-ping-reply", "0"}, {"last-ping-reply", "0"},
		{"down-after-milliseconds", "30000"}, {"info-refresh", "0"},
		{"role-reported", "master"}, {"role-reported-time", "0"}, {"config-epoch", "0"},
		{"num-slaves", "0"}, {"num-other-sentinels", itoa(others)}, {"quorum", itoa(quorum)},
		{"failover-timeout", "180000"}, {"parallel-syncs", "1"},
	})
}

// writeFields writes a map (RESP2: a flat array of pairs) of strings.
func writeFields(w *resp.Writer, kv [][2]string) {
	w.WriteMapLen(len(kv))
	for _, f := range kv {
		w.WriteBulkString(f[0])
		w.WriteBulkString(f[1])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
