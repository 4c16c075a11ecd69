package redisbridge

import (
	"slices"
	"strings"
	"sync"

	"github.com/locknode/locknode/fsm/rediscmd"
	"github.com/locknode/locknode/redisbridge/resp"
)

// COMMAND describes every command the bridge serves — its own table and
// the key space's commands — in Redis 7's ten-field form, each field the
// command's entry in the catalogue (package rediscmd): name, arity,
// flags, first key, last key, key step, ACL categories, tips and key
// specifications; subcommands are not listed. Cluster clients read it to
// find keys: redis-py's RedisCluster routes by first/last/step (and
// COMMAND GETKEYS for "movablekeys" commands), go-redis' ClusterClient
// looks up each command's flags.
//
//	COMMAND | COMMAND INFO name... | COMMAND COUNT | COMMAND LIST
//	COMMAND GETKEYS command arg...
//	COMMAND DOCS                  -> empty map

// Wire texts of COMMAND GETKEYS (Redis' own).
const (
	msgGetKeysInvalid = "ERR Invalid arguments specified for command"
	msgGetKeysUnknown = "ERR Invalid command specified"
	msgGetKeysNone    = "ERR The command has no key arguments"
	msgGetKeysArity   = "ERR Invalid number of arguments specified for command"
)

// commandEntries returns the catalogue entries of the commands s serves,
// in name order, built once per server.
func (s *Server) commandEntries() []*rediscmd.Spec {
	s.cmdInfoOnce.Do(func() {
		out := make([]*rediscmd.Spec, 0, len(s.commands))
		for _, cmd := range s.commands {
			out = append(out, cmd.spec)
		}
		slices.SortFunc(out, func(a, b *rediscmd.Spec) int { return strings.Compare(a.Name, b.Name) })
		s.cmdInfo = out
	})
	return s.cmdInfo
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
			c.w.WriteBulkString(e.Name)
		}
	case "info":
		c.w.WriteArrayLen(len(args) - 2)
		for _, a := range args[2:] {
			name := strings.ToLower(string(a))
			i, found := slices.BinarySearchFunc(entries, name, func(e *rediscmd.Spec, n string) int { return strings.Compare(e.Name, n) })
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

// commandGetKeys: the keys of the command in args, by the catalogue's key
// specifications, as ACL and CROSSSLOT checks find them. Refusals in
// Redis 7's order and words.
func commandGetKeys(c *conn, args [][]byte) {
	if len(args) < 2 {
		c.w.WriteError(errArity("command|getkeys"))
		return
	}
	cmd := c.s.commands[strings.ToLower(string(args[0]))]
	switch {
	case cmd == nil:
		c.w.WriteError(msgGetKeysUnknown)
		return
	case len(cmd.spec.Keys) == 0:
		c.w.WriteError(msgGetKeysNone)
		return
	case !cmd.spec.ArityOK(len(args)):
		c.w.WriteError(msgGetKeysArity)
		return
	}
	keys := cmd.spec.KeyArgs(args)
	if len(keys) == 0 && cmd.spec.Flags&rediscmd.NoMandatoryKeys == 0 {
		c.w.WriteError(msgGetKeysInvalid)
		return
	}
	c.w.WriteArrayLen(len(keys))
	for _, k := range keys {
		c.w.WriteBulk(k)
	}
}

func writeCommandEntry(w *resp.Writer, s *rediscmd.Spec) {
	w.WriteArrayLen(10)
	w.WriteBulkString(s.Name)
	w.WriteInt(int64(s.Arity))
	writeStatusSet(w, s.FlagNames())
	first, last, step := s.KeyRange()
	w.WriteInt(int64(first))
	w.WriteInt(int64(last))
	w.WriteInt(int64(step))
	writeStatusSet(w, s.CategoryNames())
	w.WriteSetLen(len(s.Tips))
	for _, tip := range s.Tips {
		w.WriteBulkString(tip)
	}
	w.WriteSetLen(len(s.Keys))
	for i := range s.Keys {
		writeKeySpec(w, &s.Keys[i])
	}
	w.WriteArrayLen(0) // subcommands
}

func writeStatusSet(w *resp.Writer, names []string) {
	w.WriteSetLen(len(names))
	for _, n := range names {
		w.WriteStatus(n)
	}
}

// writeKeySpec writes one key specification as Redis 7's COMMAND INFO
// does (addReplyCommandKeySpecs).
func writeKeySpec(w *resp.Writer, k *rediscmd.KeySpec) {
	n := 3
	if k.Notes != "" {
		n++
	}
	w.WriteMapLen(n)
	if k.Notes != "" {
		w.WriteBulkString("notes")
		w.WriteBulkString(k.Notes)
	}
	w.WriteBulkString("flags")
	writeStatusSet(w, k.Flags.Names())
	w.WriteBulkString("begin_search")
	w.WriteMapLen(2)
	w.WriteBulkString("type")
	if k.Index > 0 {
		w.WriteBulkString("index")
		w.WriteBulkString("spec")
		w.WriteMapLen(1)
		writeIntField(w, "index", k.Index)
	} else {
		w.WriteBulkString("keyword")
		w.WriteBulkString("spec")
		w.WriteMapLen(2)
		w.WriteBulkString("keyword")
		w.WriteBulkString(k.Keyword)
		writeIntField(w, "startfrom", k.StartFrom)
	}
	w.WriteBulkString("find_keys")
	w.WriteMapLen(2)
	w.WriteBulkString("type")
	if k.KeyNum {
		w.WriteBulkString("keynum")
		w.WriteBulkString("spec")
		w.WriteMapLen(3)
		writeIntField(w, "keynumidx", k.KeyNumIdx)
		writeIntField(w, "firstkey", k.FirstKey)
		writeIntField(w, "keystep", k.KeyStep)
	} else {
		w.WriteBulkString("range")
		w.WriteBulkString("spec")
		w.WriteMapLen(3)
		writeIntField(w, "lastkey", k.LastKey)
		writeIntField(w, "keystep", k.KeyStep)
		writeIntField(w, "limit", k.Limit)
	}
}

func writeIntField(w *resp.Writer, name string, v int) {
	w.WriteBulkString(name)
	w.WriteInt(int64(v))
}

// cmdInfoState is the Server's lazily built COMMAND table.
type cmdInfoState struct {
	cmdInfoOnce sync.Once
	cmdInfo     []*rediscmd.Spec
}
