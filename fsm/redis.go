package fsm

import "github.com/locknode/locknode/fsm/reply"

// Placeholder bodies so the package compiles while the Redis key space is
// being written; the fsm-redis work replaces this file.

func (t *Table) redis(ctx *applyCtx, args [][]byte) reply.Reply { return reply.Null }
func (t *Table) eval(ctx *applyCtx, script []byte, keys, args [][]byte) reply.Reply {
	return reply.Null
}
func (t *Table) exec(ctx *applyCtx, watch []WatchKey, multi [][][]byte) reply.Reply {
	return reply.Null
}
func (t *Table) scriptLoad(ctx *applyCtx, script []byte) reply.Reply { return reply.Null }

type redisExt struct{}

func (x *redisExt) init() {}
