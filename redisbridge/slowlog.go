package redisbridge

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/auth"
)

// SLOWLOG: this node's commands that took at least
// slowlog-log-slower-than to answer, newest first, at most
// slowlog-max-len of them, in memory. The time is the node's whole answer
// (a linearizable read's round to the leader, a write's commit), not
// Redis' CPU time alone; commands that wait by design (WAIT, WAITAOF,
// LOCK.ACQUIRE) are not logged, as Redis leaves out blocking time.

// Redis' limits on what an entry keeps of a command
// (SLOWLOG_ENTRY_MAX_ARGC, SLOWLOG_ENTRY_MAX_STRING).
const (
	slowMaxArgs  = 32
	slowMaxBytes = 128
	// slowMaxLen bounds CONFIG SET slowlog-max-len: an entry keeps up to
	// 32 arguments of ~150 bytes, so the log stays under ~50 MiB.
	slowMaxLen = 10000
	// slowMaxKeyBytes bounds the keys an entry remembers for filtering;
	// an entry naming more is shown only to users of every key.
	slowMaxKeyBytes = 4096
)

type slowEntry struct {
	id       int64
	at       int64 // unix seconds
	micros   int64
	args     []string // truncated as Redis does
	keys     []string // the command's keys, for the reader's key patterns
	manyKeys bool     // keys were over slowMaxKeyBytes: shown to users of every key
	addr     string
	name     string
}

type slowlog struct {
	slower atomic.Int64 // microseconds; negative: off
	mu     sync.Mutex
	maxLen int
	nextID int64
	list   []slowEntry // oldest first
}

func newSlowlog(slower time.Duration, maxLen int) *slowlog {
	l := &slowlog{maxLen: min(maxLen, slowMaxLen)}
	if slower < 0 {
		l.slower.Store(-1)
	} else {
		l.slower.Store(slower.Microseconds())
	}
	return l
}

// notLogged are commands whose time is waiting by design, and those whose
// arguments are credentials.
var notLogged = map[string]bool{"wait": true, "waitaof": true, "lock.acquire": true}

// redacted are commands whose arguments after the name are replaced, as
// Redis does for AUTH and HELLO's passwords.
var redacted = map[string]bool{"auth": true, "hello": true}

// observe logs the command if it took long enough. args are the
// connection's (copied here when logged).
func (c *conn) observeSlow(cmd *command, name string, args [][]byte, took time.Duration) {
	l := c.s.slow
	limit := l.slower.Load()
	if limit < 0 || took.Microseconds() < limit || notLogged[name] {
		return
	}
	e := slowEntry{at: time.Now().Unix(), micros: took.Microseconds(), addr: c.nc.RemoteAddr().String(), name: c.name}
	n := min(len(args), slowMaxArgs)
	e.args = make([]string, n)
	for i := range n {
		a := args[i]
		switch {
		case i == slowMaxArgs-1 && len(args) > slowMaxArgs:
			e.args[i] = "... (" + strconv.Itoa(len(args)-slowMaxArgs+1) + " more arguments)"
		case i > 0 && redacted[name]:
			e.args[i] = "(redacted)"
		case len(a) > slowMaxBytes:
			e.args[i] = string(a[:slowMaxBytes]) + "... (" + strconv.Itoa(len(a)-slowMaxBytes) + " more bytes)"
		default:
			e.args[i] = string(a)
		}
	}
	size := 0
	for _, k := range cmd.spec.KeyArgs(args) {
		if size += len(k); size > slowMaxKeyBytes {
			e.keys, e.manyKeys = nil, true
			break
		}
		e.keys = append(e.keys, string(k))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.list = append(l.list, e)
	l.trim()
}

// trim drops the oldest entries past maxLen. Call with mu held.
func (l *slowlog) trim() {
	if over := len(l.list) - l.maxLen; over > 0 {
		clear(l.list[:over])
		l.list = l.list[over:]
	}
}

// visible returns the entries u may see, newest first (nil u: all).
func (l *slowlog) visible(u *auth.User) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]slowEntry, 0, len(l.list))
	for i := len(l.list) - 1; i >= 0; i-- {
		if e := l.list[i]; canSeeEntry(u, e) {
			out = append(out, e)
		}
	}
	return out
}

func canSeeEntry(u *auth.User, e slowEntry) bool {
	if u == nil || u.AllKeys() {
		return true
	}
	if e.manyKeys {
		return false
	}
	for _, k := range e.keys {
		if !u.Key(k) {
			return false
		}
	}
	return true
}

// caller returns the connection's user for filtering (nil: no users, or
// a user of every key).
func (a *connACL) caller() *auth.User {
	c := a.c
	if c.s.users == nil {
		return nil
	}
	return c.s.users.Users().Lookup(a.user)
}

// SLOWLOG GET [count] | LEN | RESET | HELP. GET and LEN show only the
// entries whose keys the caller's key patterns allow.
func cmdSlowlog(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "get" && len(args) <= 3:
		count := int64(10)
		if len(args) == 3 {
			n, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil || n < -1 {
				c.w.WriteError("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		es := c.s.slow.visible(c.acl.caller())
		if count >= 0 && int64(len(es)) > count {
			es = es[:count]
		}
		c.w.WriteArrayLen(len(es))
		for _, e := range es {
			c.w.WriteArrayLen(6)
			c.w.WriteInt(e.id)
			c.w.WriteInt(e.at)
			c.w.WriteInt(e.micros)
			c.w.WriteArrayLen(len(e.args))
			for _, a := range e.args {
				c.w.WriteBulkString(a)
			}
			c.w.WriteBulkString(e.addr)
			c.w.WriteBulkString(e.name)
		}
	case sub == "len" && len(args) == 2:
		c.w.WriteInt(int64(len(c.s.slow.visible(c.acl.caller()))))
	case sub == "reset" && len(args) == 2:
		l := c.s.slow
		l.mu.Lock()
		l.list = nil
		l.mu.Unlock()
		c.w.WriteStatus("OK")
	case sub == "help" && len(args) == 2:
		lines := []string{
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Print this help.",
		}
		c.w.WriteArrayLen(len(lines))
		for _, s := range lines {
			c.w.WriteStatus(s)
		}
	case sub == "get" || sub == "len" || sub == "reset" || sub == "help":
		c.w.WriteError(errArity("slowlog|" + sub))
	default:
		c.w.WriteError(unknownSubcommand(args[1], "slowlog"))
	}
}

// slowlogAccess: every SLOWLOG subcommand is admin, as in Redis (HELP:
// any user).
func slowlogAccess(_ string, args [][]byte) access {
	if sub := strings.ToLower(string(args[1])); sub != "help" {
		return access{cat: auth.Admin, name: "slowlog|" + sub}
	}
	return access{}
}

// get returns slowlog-log-slower-than (µs) and slowlog-max-len, for
// CONFIG GET.
func (l *slowlog) get() (slower int64, maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slower.Load(), l.maxLen
}

// set applies CONFIG SET param value; it returns the error text or "".
func (l *slowlog) set(param, value string) string {
	n, err := strconv.ParseInt(value, 10, 64)
	switch param {
	case "slowlog-log-slower-than":
		if err != nil {
			return "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument couldn't be parsed into an integer"
		}
		if n < 0 {
			n = -1
		}
		l.slower.Store(n)
	case "slowlog-max-len":
		if err != nil || n < 0 || n > slowMaxLen {
			return "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be between 0 and " + strconv.Itoa(slowMaxLen) + " inclusive"
		}
		l.mu.Lock()
		l.maxLen = int(n)
		l.trim()
		l.mu.Unlock()
	default:
		return "ERR Unknown option or number of arguments for CONFIG SET - '" + param + "'"
	}
	return ""
}

// configSet serves CONFIG SET param value [param value ...]: the slowlog
// parameters and notify-keyspace-events, this node's, not persisted.
// Every pair is checked before any is applied, as Redis does, so a
// refused CONFIG SET changes nothing.
func configSet(c *conn, args [][]byte) {
	if len(args) < 4 {
		c.w.WriteError(errArity("config|set"))
		return
	}
	if len(args)%2 != 0 {
		c.w.WriteError(msgSyntax)
		return
	}
	l := c.s.slow
	probe := newSlowlog(0, 0)
	seen := make(map[string]bool, (len(args)-2)/2)
	var notify notifyFlags
	setNotify := false
	for i := 2; i < len(args); i += 2 {
		param := strings.ToLower(string(args[i]))
		if seen[param] {
			c.w.WriteError("ERR CONFIG SET failed (possibly related to argument '" + param + "') - duplicate parameter")
			return
		}
		seen[param] = true
		if param == "notify-keyspace-events" {
			f, ok := parseNotifyFlags(string(args[i+1]))
			if !ok {
				c.w.WriteError(msgNotifyFlags)
				return
			}
			notify, setNotify = f, true
			continue
		}
		if msg := probe.set(param, string(args[i+1])); msg != "" {
			c.w.WriteError(msg)
			return
		}
	}
	for i := 2; i < len(args); i += 2 {
		if param := strings.ToLower(string(args[i])); param != "notify-keyspace-events" {
			l.set(param, string(args[i+1]))
		}
	}
	if setNotify {
		c.s.setNotify(notify)
	}
	c.w.WriteStatus("OK")
}

// configAccess: CONFIG SET is admin, the rest read.
func configAccess(_ string, args [][]byte) access {
	if strings.EqualFold(string(args[1]), "set") {
		return access{cat: auth.Admin, name: "config|set"}
	}
	return access{cat: auth.Read}
}
