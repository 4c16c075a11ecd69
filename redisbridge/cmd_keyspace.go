package redisbridge

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
)

// The key-space commands: SCAN, KEYS, DBSIZE (and INFO keyspace). They are
// linearizable reads like GET. Each shows only the keys the caller's key
// patterns allow: Redis runs KEYS and SCAN for any user of @keyspace and
// lists every key, whatever its ~patterns; here a user of ~app:* sees
// app:* keys alone, and DBSIZE counts those.
//
// Lock keys are keys: a lock reads as a string, as TYPE says.
//
// The table keeps keys in a hash map, so KEYS, DBSIZE, INFO keyspace and
// each SCAN step walk the whole key space while holding the table for
// reading (applying waits meanwhile); matching, filtering and sorting run
// after it is released. SCAN walks once an iteration (scan_cache.go).

// keyFilter is what the caller may see: nil allows every key.
func (a *connACL) keyFilter() *auth.User {
	u := a.caller()
	if u != nil && u.AllKeys() {
		return nil
	}
	return u
}

func visible(u *auth.User, key string) bool { return u == nil || u.Key(key) }

// liveKeys returns every key the caller may see, read linearizably, or
// false after writing the error.
func (c *conn) liveKeys() ([]fsm.KeyEntry, bool) {
	ctx, cancel := c.ctx()
	defer cancel()
	all, err := c.s.visibleKeys(ctx, c.acl.keyFilter(), false)
	if err != nil {
		c.writeErr(err)
		return nil, false
	}
	return all, true
}

// visibleKeys returns every key u may see (nil: every key); stale reads this
// node's table as it is.
func (s *Server) visibleKeys(ctx context.Context, u *auth.User, stale bool) ([]fsm.KeyEntry, error) {
	var all []fsm.KeyEntry
	if err := s.b.Read(ctx, stale, func(t *fsm.Table, now int64) { all = t.Keys(now) }); err != nil {
		return nil, err
	}
	if u == nil {
		return all, nil
	}
	return slices.DeleteFunc(all, func(e fsm.KeyEntry) bool { return !u.Key(e.Key) }), nil
}

// KEYS pattern: sorted, which Redis does not promise but tests and
// operators like.
func cmdKeys(c *conn, args [][]byte) {
	all, ok := c.liveKeys()
	if !ok {
		return
	}
	pat := string(args[1])
	var out []string
	for _, e := range all {
		if pat == "*" || auth.Match(pat, e.Key) {
			out = append(out, e.Key)
		}
	}
	slices.Sort(out)
	c.w.WriteArrayLen(len(out))
	for _, k := range out {
		c.w.WriteBulkString(k)
	}
}

// DBSIZE
func cmdDBSize(c *conn, _ [][]byte) {
	ctx, cancel := c.ctx()
	defer cancel()
	n, _, err := c.s.countKeys(ctx, c.acl.keyFilter(), false)
	if err != nil {
		c.writeErr(err)
		return
	}
	c.w.WriteInt(int64(n))
}

// countKeys counts the keys u may see (nil: every key) and those of them with a
// deadline; for a user of every key without copying the names.
func (s *Server) countKeys(ctx context.Context, u *auth.User, stale bool) (keys, expires int, err error) {
	if u == nil {
		err = s.b.Read(ctx, stale, func(t *fsm.Table, now int64) { keys, expires = t.KeyCount(now) })
		return keys, expires, err
	}
	all, err := s.visibleKeys(ctx, u, stale)
	for _, e := range all {
		if e.Expires {
			expires++
		}
	}
	return len(all), expires, err
}

// scanOpts is SCAN's parsed options.
type scanOpts struct {
	cursor uint64
	match  string // "" none
	count  int
	typ    string // "" any
}

func parseScan(args [][]byte) (o scanOpts, msg string) {
	cur, ok := parseCursor(string(args[1]))
	if !ok {
		return o, "ERR invalid cursor"
	}
	o.cursor, o.count = cur, 10
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return o, msgSyntax
		}
		v := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "match":
			o.match = string(v)
		case "count":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return o, msgNotInt
			}
			if n < 1 {
				return o, msgSyntax
			}
			o.count = int(min(n, int64(1<<30)))
		case "type":
			o.typ = strings.ToLower(string(v))
		default:
			return o, msgSyntax
		}
	}
	return o, ""
}

// parseCursor reads a cursor as Redis does (C's strtoul): an optional
// sign, "-1" wrapping to the largest cursor, "" reading as 0.
func parseCursor(s string) (uint64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
		if s == "" {
			return 0, false
		}
	}
	if s == "" {
		return 0, true
	}
	if s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is a
// position in a fixed hash order of the keys (fsm.ScanHash) and a
// snapshot's name (scan_cache.go), valid on every node: a key present for
// the whole iteration is returned exactly once. MATCH, TYPE and the key patterns filter a step's keys after they
// are chosen, so a step may return none and a non-zero cursor, as in
// Redis. An unknown TYPE matches nothing (Redis 7.0).
func cmdScan(c *conn, args [][]byte) {
	o, msg := parseScan(args)
	if msg != "" {
		c.w.WriteError(msg)
		return
	}
	batch, next, ok := c.scanStep(o.cursor, o.count)
	if !ok {
		return
	}
	u := c.acl.keyFilter()
	out := batch[:0]
	for _, e := range batch {
		if (o.typ == "" || e.Type == o.typ) && (o.match == "" || auth.Match(o.match, e.Key)) && visible(u, e.Key) {
			out = append(out, e)
		}
	}
	c.w.WriteArrayLen(2)
	c.w.WriteBulkString(strconv.FormatUint(next, 10))
	c.w.WriteArrayLen(len(out))
	for _, e := range out {
		c.w.WriteBulkString(e.Key)
	}
}

// keyspaceInfo is INFO's Keyspace section: db0's line when the caller
// sees any key, as Redis leaves empty databases out. avg_ttl is 0, as
// Redis reports when it has not sampled. Like the rest of INFO it tells
// this node's state (a stale read: no round to the leader, so INFO
// answers on a node cut off from it). ok is false when the node has no
// table to read (not joined): INFO then leaves the section out.
func (s *Server) keyspaceInfo(u *auth.User) (lines []string, ok bool) {
	ctx, cancel := context.WithTimeout(s.baseCtx, time.Second)
	defer cancel()
	n, expires, err := s.countKeys(ctx, u, true)
	if err != nil {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	return []string{"db0:keys=" + strconv.Itoa(n) + ",expires=" + strconv.Itoa(expires) + ",avg_ttl=0"}, true
}
