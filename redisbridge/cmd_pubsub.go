package redisbridge

import (
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *conn, args [][]byte) { c.subscribe(args[1:], false) }

// PSUBSCRIBE pattern [pattern ...] (Redis glob patterns)
func cmdPSubscribe(c *conn, args [][]byte) { c.subscribe(args[1:], true) }

// UNSUBSCRIBE [channel ...]
func cmdUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(args[1:], false) }

// PUNSUBSCRIBE [pattern ...]
func cmdPUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(args[1:], true) }

func (c *conn) subscribe(names [][]byte, pattern bool) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	c.out.start()
	for _, n := range names {
		count := c.s.hub.subscribe(c, string(n), pattern)
		c.w.WritePushLen(3)
		c.w.WriteBulkString(kind)
		c.w.WriteBulk(n)
		c.w.WriteInt(int64(count))
	}
}

func (c *conn) unsubscribe(names [][]byte, pattern bool) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = string(n)
	}
	if len(list) == 0 {
		list = c.s.hub.names(c, pattern)
		if len(list) == 0 {
			c.w.WritePushLen(3)
			c.w.WriteBulkString(kind)
			c.w.WriteNull()
			c.w.WriteInt(int64(c.subCount()))
			return
		}
	}
	for _, n := range list {
		count := c.s.hub.unsubscribe(c, n, pattern)
		c.w.WritePushLen(3)
		c.w.WriteBulkString(kind)
		c.w.WriteBulkString(n)
		c.w.WriteInt(int64(count))
	}
}

func (c *conn) subCount() int {
	return len(c.s.hub.names(c, false)) + len(c.s.hub.names(c, true))
}

// PUBLISH channel message: one log entry; every node delivers it to its
// own subscribers when it applies the entry. The reply counts this node's
// receivers (the entry is applied here before Apply returns).
func cmdPublish(c *conn, args [][]byte) {
	r, ok := c.apply(&fsm.Command{Op: fsm.OpRedis, Args: resp.CloneArgs(args)})
	if !ok {
		return
	}
	if r.Reply.IsError() {
		c.w.WriteReply(r.Reply)
		return
	}
	c.w.WriteInt(int64(c.s.hub.receivers(string(args[1]))))
}
