package redisbridge

import (
	"slices"
	"strings"
	"sync"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// COMMAND describes every command the bridge serves — its own table and
// the FSM's Redis commands — in Redis 7's ten-field form: name, arity,
// flags, first key, last key, key step, ACL categories, and empty tips,
// key specifications and subcommands. Cluster clients read it to find
// keys: redis-py's RedisCluster routes by first/last/step (and COMMAND
// GETKEYS for "movablekeys" commands), go-redis' ClusterClient looks up
// each command's flags.
//
// Key positions are not kept in a second table: they are read off the
// same key functions the ACL check uses (acl.go), applied to a probe
// argument list (commandKeySpec).
//
//	COMMAND | COMMAND INFO name... | COMMAND COUNT | COMMAND LIST
//	COMMAND GETKEYS command arg...
//	COMMAND DOCS                  -> empty map

// Wire texts of COMMAND GETKEYS (Redis' own).
const (
	msgGetKeysInvalid = "ERR Invalid arguments specified for command"
	msgGetKeysUnknown = "ERR Invalid command specified"
	msgGetKeysNone    = "ERR The command has no key arguments"
)

// commandEntry is one command's COMMAND reply.
type commandEntry struct {
	name              string
	arity             int
	flags             []string
	first, last, step int
	categories        []string
}

// movableKeys are the commands whose keys depend on argument values
// (numkeys), as Redis flags them.
var movableKeys = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true}

// commandEntries builds the entries once per server.
func (s *Server) commandEntries() []commandEntry {
	s.cmdInfoOnce.Do(func() {
		var out []commandEntry
		for name, cmd := range s.commands {
			ar := cmd.arity
			if ar == 0 {
				ar = -1
			}
			out = append(out, newCommandEntry(name, ar, cmd))
		}
		for _, name := range fsm.RedisCommands() {
			if _, own := s.commands[name]; own {
				continue
			}
			ar := fsm.CommandArity(name)
			if ar == 0 {
				ar = -1
			}
			out = append(out, newCommandEntry(name, ar, dataCommand))
		}
		slices.SortFunc(out, func(a, b commandEntry) int { return strings.Compare(a.name, b.name) })
		s.cmdInfo = out
	})
	return s.cmdInfo
}

func newCommandEntry(name string, arity int, cmd *command) commandEntry {
	e := commandEntry{name: name, arity: arity}
	acc := cmd.acl
	if acc == nil {
		acc = dataAccess
	}
	probe := func(n int) (access, [][]byte) {
		args := make([][]byte, n)
		args[0] = []byte(name)
		for i := 1; i < n; i++ {
			args[i] = []byte{'p', byte('0' + i)}
		}
		return acc(name, args), args
	}
	// Key functions assume the command's arity holds: every probe has 9
	// or more arguments, which every command in the table accepts or
	// ignores past its own.
	a, _ := probe(9)
	cat := a.cat
	switch {
	case cat == 0:
		e.flags, e.categories = []string{"fast"}, []string{"@connection"}
	case cat&auth.Admin != 0:
		e.flags, e.categories = []string{"admin"}, []string{"@admin"}
	case cat == auth.Read:
		e.flags, e.categories = []string{"readonly"}, []string{"@read"}
	default:
		e.flags, e.categories = []string{"write"}, []string{"@write"}
	}
	if movableKeys[name] {
		e.flags = append(e.flags, "movablekeys")
		return e
	}
	e.first, e.last, e.step = keySpecOf(probe)
	return e
}

// keySpecOf reads first key, last key and step off the key positions a
// probe of 9 and of 11 arguments yields: (0, 0, 0) without keys, a
// negative last when the keys run to the end of the arguments.
func keySpecOf(probe func(n int) (access, [][]byte)) (first, last, step int) {
	positions := func(n int) []int {
		a, args := probe(n)
		var pos []int
		for _, k := range a.keys {
			for i := 1; i < n; i++ {
				if string(args[i]) == string(k) {
					pos = append(pos, i)
					break
				}
			}
		}
		return pos
	}
	short, long := positions(9), positions(11)
	if len(short) == 0 {
		return 0, 0, 0
	}
	first, step = short[0], 1
	if len(short) > 1 {
		step = short[1] - short[0]
	}
	last = short[len(short)-1]
	if len(long) > len(short) {
		// The keys grow with the arguments: counted from the end, -1
		// when they run to the last argument a step can reach (DEL: 1,
		// -1, 1; MSET: 1, -1, 2).
		last -= 9
		if -last <= step {
			last = -1
		}
	}
	return first, last, step
}

func cmdCommand(c *conn, args [][]byte) {
	entries := c.s.commandEntries()
	if len(args) == 1 {
		c.w.WriteArrayLen(len(entries))
		for _, e := range entries {
			writeCommandEntry(c.w, e)
		}
		return
	}
	switch strings.ToLower(string(args[1])) {
	case "count":
		c.w.WriteInt(int64(len(entries)))
	case "docs":
		c.w.WriteMapLen(0)
	case "list":
		c.w.WriteArrayLen(len(entries))
		for _, e := range entries {
			c.w.WriteBulkString(e.name)
		}
	case "info":
		c.w.WriteArrayLen(len(args) - 2)
		for _, a := range args[2:] {
			name := strings.ToLower(string(a))
			i, found := slices.BinarySearchFunc(entries, name, func(e commandEntry, n string) int { return strings.Compare(e.name, n) })
			if !found {
				c.w.WriteNullArray()
				continue
			}
			writeCommandEntry(c.w, entries[i])
		}
	case "getkeys":
		commandGetKeys(c, args[2:])
	default:
		c.w.WriteError(unknownSubcommand(args[1], "command"))
	}
}

// commandGetKeys: the keys of the command in args, by the same key
// functions as ACL and CROSSSLOT checks.
func commandGetKeys(c *conn, args [][]byte) {
	if len(args) == 0 {
		c.w.WriteError(errArity("command|getkeys"))
		return
	}
	name := strings.ToLower(string(args[0]))
	cmd := c.s.commands[name]
	if cmd == nil && fsm.IsKnownCommand(args[0]) {
		cmd = dataCommand
	}
	if cmd == nil {
		c.w.WriteError(msgGetKeysUnknown)
		return
	}
	if !arityAccepts(cmd, name, args) {
		c.w.WriteError(msgGetKeysInvalid)
		return
	}
	acc := cmd.acl
	if acc == nil {
		acc = dataAccess
	}
	keys := acc(name, args).keys
	if len(keys) == 0 {
		c.w.WriteError(msgGetKeysNone)
		return
	}
	c.w.WriteArrayLen(len(keys))
	for _, k := range keys {
		c.w.WriteBulk(k)
	}
}

func writeCommandEntry(w *resp.Writer, e commandEntry) {
	w.WriteArrayLen(10)
	w.WriteBulkString(e.name)
	w.WriteInt(int64(e.arity))
	w.WriteSetLen(len(e.flags))
	for _, f := range e.flags {
		w.WriteStatus(f)
	}
	w.WriteInt(int64(e.first))
	w.WriteInt(int64(e.last))
	w.WriteInt(int64(e.step))
	w.WriteSetLen(len(e.categories))
	for _, cat := range e.categories {
		w.WriteStatus(cat)
	}
	w.WriteSetLen(0)   // tips
	w.WriteArrayLen(0) // key specifications
	w.WriteArrayLen(0) // subcommands
}

// cmdInfoState is the Server's lazily built COMMAND table.
type cmdInfoState struct {
	cmdInfoOnce sync.Once
	cmdInfo     []commandEntry
}
