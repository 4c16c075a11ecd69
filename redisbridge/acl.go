package redisbridge

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
)

// Permissions. With Config.Users set, each command is checked once, in
// dispatch, against what its catalogue entry says it needs (refined by
// subcommand in its command-table entry): a category and the keys and
// channels it names (Redis' order: command, then keys, then channels;
// Redis' NOPERM texts). Connection commands
// (PING, AUTH, HELLO, CLIENT, ...) need no category.

// access is what one command needs.
type access struct {
	cat      auth.Category // 0: any authenticated user
	name     string        // for NOPERM's text when not the command's ("script|flush")
	keys     [][]byte
	chans    [][]byte
	patterns bool // chans are PSUBSCRIBE patterns
}

// accessFn refines, by subcommand, the permission the catalogue gives a
// command (args have its arity; name is its name in lower case): it
// returns the category needed and, when not the command's, the name
// NOPERM quotes ("script|flush"). Keys and channels are the catalogue's.
type accessFn func(name string, args [][]byte) access

const (
	msgNoPermKeys  = "NOPERM this user has no permissions to access one of the keys used as arguments"
	msgNoPermChans = "NOPERM this user has no permissions to access one of the channels used as arguments"
)

func msgNoPermCmd(name string) string {
	return "NOPERM this user has no permissions to run the '" + name + "' command"
}

// permCategory is the users-file category each catalogue permission
// needs (0: any authenticated user).
var permCategory = [...]auth.Category{
	rediscmd.PermNone:  0,
	rediscmd.PermRead:  auth.Read,
	rediscmd.PermWrite: auth.Write,
	rediscmd.PermAdmin: auth.Admin,
}

// accessOf is what cmd with args (arity checked) needs: the catalogue's
// permission, keys and channels, the permission refined by the table's
// accessFn when it has one.
func accessOf(cmd *command, name string, args [][]byte) access {
	s := cmd.spec
	a := access{cat: permCategory[s.Perm], keys: s.KeyArgs(args), chans: s.ChannelArgs(args), patterns: s.Channels.Patterns}
	if cmd.acl != nil {
		r := cmd.acl(name, args)
		a.cat, a.name = r.cat, r.name
	}
	return a
}

// lockReleaseAccess: LOCK.RELEASE of one's own hold is write; FORCE
// (anybody's hold) is admin.
func lockReleaseAccess(_ string, args [][]byte) access {
	a := access{cat: auth.Write}
	for i := 3; i < len(args); i++ {
		switch {
		case strings.EqualFold(string(args[i]), "id"):
			i++ // its value is a request id, whatever it reads
		case strings.EqualFold(string(args[i]), "force"):
			a.cat = auth.Admin
		}
	}
	return a
}

// scriptAccess: SCRIPT LOAD is write, EXISTS read, FLUSH and KILL admin.
func scriptAccess(_ string, args [][]byte) access {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "load":
		return access{cat: auth.Write, name: "script|load"}
	case "exists":
		return access{cat: auth.Read, name: "script|exists"}
	case "flush", "kill":
		return access{cat: auth.Admin, name: "script|" + sub}
	}
	return access{} // HELP and unknown subcommands: the handler answers
}

// connACL is who a connection is and what it may do: its user, and the
// guard against guessing passwords. It is one part of a conn: c is the
// connection. Touched only by serve (under wmu when a command runs),
// except subUser.
type connACL struct {
	c      *conn
	authed bool
	user   string // the authenticated user's name (ACL WHOAMI); looked up again per command
	// subUser is user for publish (pubsub.go), which runs outside serve.
	subUser atomic.Pointer[string]

	// authBy is when an unauthenticated connection is closed (zero:
	// never); authFails counts failed AUTHs; authDelay is the wait before
	// the last failure's answer goes out.
	authBy    time.Time
	authFails int
	authDelay time.Duration
}

// permission returns the error text that refuses args for the
// connection's user, or "". Call only with Config.Users set.
func (a *connACL) permission(cmd *command, name string, args [][]byte) string {
	c := a.c
	u := c.s.users.Users().Lookup(a.user)
	if u == nil || !u.Enabled {
		// Removed or disabled by a reload: the connection must
		// authenticate again.
		a.authed = false
		return msgNoAuth
	}
	ac := accessOf(cmd, name, args)
	if ac.cat == 0 {
		return ""
	}
	if !u.Can(ac.cat) {
		if ac.name != "" {
			name = ac.name
		}
		return msgNoPermCmd(name)
	}
	for _, k := range ac.keys {
		if !u.Key(string(k)) {
			return msgNoPermKeys
		}
	}
	for _, ch := range ac.chans {
		ok := u.Channel(string(ch))
		if ac.patterns {
			ok = u.ChannelPattern(string(ch))
		}
		if !ok {
			return msgNoPermChans
		}
	}
	return ""
}

// cmdACL: ACL WHOAMI, LIST, LOAD. LIST renders each user as a users-file
// line with sha256 hashes, never passwords; LOAD re-reads the users file,
// as SIGHUP does, on this node only (each node reads its own file).
func cmdACL(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "whoami", "list", "load":
	default:
		c.w.WriteError(unknownSubcommand(args[1], "acl"))
		return
	}
	if len(args) != 2 {
		c.w.WriteError(errArity("acl|" + sub))
		return
	}
	switch sub {
	case "whoami":
		c.w.WriteBulkString(c.acl.user)
	case "list":
		if c.s.users == nil {
			// No users: everybody is Redis' default user.
			c.w.WriteArrayLen(1)
			c.w.WriteBulkString("user default on nopass ~* &* +@all")
			return
		}
		us := c.s.users.Users()
		names := us.Names()
		c.w.WriteArrayLen(len(names))
		for _, n := range names {
			c.w.WriteBulkString(us.Lookup(n).Rule())
		}
	case "load":
		if !c.s.users.Reloadable() {
			c.w.WriteError(msgNoACLFile)
			return
		}
		if err := c.s.users.Reload(); err != nil {
			// The file's error names the line, never a password; the
			// users in force stay.
			c.w.WriteError("ERR " + strings.TrimPrefix(err.Error(), "auth: "))
			return
		}
		c.w.WriteStatus("OK")
	}
}

// msgNoACLFile: Redis' text when ACL LOAD has no file to read.
const msgNoACLFile = "ERR This Redis instance is not configured to use an ACL file. Start locknode with --users FILE to load users from a file."

// aclAccess: ACL LIST and LOAD are admin, as in Redis; WHOAMI any user.
func aclAccess(_ string, args [][]byte) access {
	switch sub := strings.ToLower(string(args[1])); sub {
	case "list", "load":
		return access{cat: auth.Admin, name: "acl|" + sub}
	}
	return access{}
}

// anonymous is a fresh (or RESET) connection's state: authenticated as
// "default" when there are no users, or when "default" is "on nopass".
func (s *Server) anonymous() (authed bool, user string) {
	if s.users == nil {
		return true, auth.DefaultUser
	}
	if u := s.users.Users().Anonymous(); u != nil {
		return true, u.Name
	}
	return false, ""
}

// login authenticates the connection as user; on failure the connection
// keeps its previous user and the caller replies WRONGPASS. Without
// users, "default" with any password succeeds (Redis' nopass default).
func (a *connACL) login(user, pass []byte) bool {
	c := a.c
	if c.s.users == nil {
		return string(user) == auth.DefaultUser
	}
	us := c.s.users.Users()
	u, err := us.Authenticate(string(user), string(pass))
	if err != nil {
		c.s.cfg.Audit.Failure("resp", auth.ReasonCredentials)
		a.authFails++
		v := c.s.cfg.AuthThrottle.Failed("resp", us.LogName(string(user)), c.nc.RemoteAddr(), a.authFails)
		a.authDelay = v.Delay // waited by serve before the answer goes out
		if v.Disconnect {
			c.quit = true // closed once WRONGPASS is written
		}
		return false
	}
	a.authFails = 0
	c.s.cfg.AuthThrottle.Succeeded(c.nc.RemoteAddr())
	a.authed, a.user = true, u.Name
	a.subUser.Store(&u.Name)
	return true
}

// noForce reports whether the connection's commands must not end or
// change a lock without its owner's token (fsm.Command.NoForce): users
// are configured and this user lacks admin. The FSM decides, when it
// applies the entry, whether a command would do so: the bridge never
// reads before it writes.
func (a *connACL) noForce() bool {
	c := a.c
	if c.s.users == nil {
		return false
	}
	return !c.s.users.Users().Lookup(a.user).Can(auth.Admin)
}

// keysOnly reports whether the connection's scripts may touch only the
// keys they declare (fsm.Command.KeysOnly): the user is limited to key
// patterns, and the bridge checked the declared keys against them.
func (a *connACL) keysOnly() bool {
	c := a.c
	if c.s.users == nil {
		return false
	}
	u := c.s.users.Users().Lookup(a.user)
	return u == nil || !u.AllKeys()
}

// auditForced audits the holds a Redis command (DEL, SET over a lock, a
// script, EXEC) ended by force: the FSM says which in its events.
func (a *connACL) auditForced(evs []fsm.Event) {
	c := a.c
	if c.s.cfg.Audit == nil {
		return
	}
	for _, e := range evs {
		if e.Kind == fsm.EvReleased && e.Reason == fsm.ReasonForced {
			c.s.cfg.Audit.Event(auth.EventForceRelease, a.user, c.nc.RemoteAddr().String(), "key", e.Key, "owner", e.Owner)
		}
	}
}

// mayKey reports whether c's user may see key (its name in a BCAST
// invalidation). Without users, every key.
func (a *connACL) mayKey(key string) bool {
	c := a.c
	if c.s.users == nil {
		return true
	}
	name := a.subUser.Load()
	if name == nil {
		return false
	}
	u := c.s.users.Users().Lookup(*name)
	return u != nil && u.Enabled && u.Can(auth.Read) && u.Key(key)
}

// mayReceive reports whether a subscriber may still be sent a message of
// channel (through pattern, when not ""): a reload can disable its user
// or narrow its channels after it subscribed. Called by publish, outside
// serve: it reads the user name from subUser.
func (a *connACL) mayReceive(channel, pattern string) bool {
	c := a.c
	if c.s.users == nil {
		return true
	}
	name := a.subUser.Load()
	if name == nil {
		return false
	}
	u := c.s.users.Users().Lookup(*name)
	if !u.Can(auth.Read) {
		return false
	}
	if pattern != "" {
		return u.ChannelPattern(pattern)
	}
	return u.Channel(channel)
}
