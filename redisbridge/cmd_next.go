//go:build locknode_next

package redisbridge

import (
	"fmt"

	"github.com/locknode/locknode/fsm"
)

// nextCommands are the synthetic next release's commands, for the
// rolling-upgrade tests: NEXT.NOTE key value sets key's note (fsm.OpNote,
// cluster version 2) and replies with the note it replaces.
var nextCommands = []*command{
	{"next.note", 0, nil, cmdNextNote, nil},
}

// cmdNextNote proposes OpNote only once cluster version 2 is active here:
// before, the old nodes could not apply it (they would halt).
func cmdNextNote(c *conn, args [][]byte) {
	ctx, cancel := c.ctx()
	defer cancel()
	var active uint32
	if err := c.s.b.Read(ctx, true, func(t *fsm.Table, _ int64) { active = t.Version() }); err != nil {
		c.writeErr(err)
		return
	}
	if v, _ := fsm.OpVersion(fsm.OpNote); active < v {
		c.w.WriteError(fmt.Sprintf("ERR next.note needs cluster version %d (active: %d)", v, active))
		return
	}
	r, err := c.s.b.Apply(ctx, &fsm.Command{Op: fsm.OpNote, Key: string(args[1]), Owner: string(args[2])})
	if err == nil {
		err = r.Err
	}
	if err != nil {
		c.writeErr(err)
		return
	}
	c.w.WriteReply(r.Reply)
}
