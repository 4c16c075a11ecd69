package redisbridge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locknode/locknode/auth"
)

// ROLE and the CLIENT subcommands that look at other connections: LIST,
// KILL, NO-EVICT, HELP. Each node answers for its own connections, as
// each Redis server does.

// clientArity: Redis' arity of each CLIENT subcommand (name included;
// negative: at least).
var clientArity = map[string]int{
	"setname": 3, "getname": 2, "setinfo": 4, "id": 2, "info": 2,
	"list": -2, "kill": -3, "no-evict": 3, "help": 2,
	"tracking": -3, "caching": 3, "getredir": 2, "trackinginfo": 2,
}

// clientHelp is CLIENT HELP's reply: what this bridge implements.
var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"    * ID <client-id>",
	"      Kill connections by client id.",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"    * ID <client-id> [<client-id> ...]",
	"      Return clients of specified IDs only.",
	"NO-EVICT (ON|OFF)",
	"    Accepted and ignored: this server never evicts clients.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"SETINFO <option> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"HELP",
	"    Print this help.",
}

// cmdRole: a locknode node is a master with no replicas (the cluster
// replicates through Raft, which Redis clients cannot see).
func cmdRole(c *conn, _ [][]byte) {
	c.w.WriteArrayLen(3)
	c.w.WriteBulkString("master")
	c.w.WriteInt(0)
	c.w.WriteArrayLen(0)
}

// clientAccess: CLIENT LIST, KILL and NO-EVICT are admin, as in Redis
// (they show or end other users' connections); the rest concern the
// caller's own connection.
func clientAccess(_ string, args [][]byte) access {
	switch sub := strings.ToLower(string(args[1])); sub {
	case "list", "kill", "no-evict":
		return access{cat: auth.Admin, name: "client|" + sub}
	}
	return access{}
}

// listedInfo is what serve publishes of a connection for CLIENT LIST on
// other connections.
type listedInfo struct {
	name  string
	proto int
}

// publishListed publishes c's name and protocol. Call from serve after
// changing either.
func (c *conn) publishListed() {
	c.listed.Store(&listedInfo{name: c.name, proto: c.w.Proto})
}

// listLine is c's CLIENT LIST line as seen from the connection self. The
// buffer figures are only readable by c's own goroutine: other
// connections show them as 0 (and multi as -1).
func (c *conn) listLine(self *conn) string {
	if c == self {
		return c.clientInfo()
	}
	name, proto := "", 2
	if l := c.listed.Load(); l != nil {
		name, proto = l.name, l.proto
	}
	oll, omem := c.out.queued()
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s db=0 sub=%d psub=%d ssub=0 multi=-1 "+
		"qbuf=0 qbuf-free=0 argv-mem=0 obl=0 oll=%d omem=%d tot-mem=%d resp=%d\n",
		c.id, c.nc.RemoteAddr(), c.nc.LocalAddr(), name, len(c.s.hub.names(c, false)),
		len(c.s.hub.names(c, true)), oll, omem, omem, proto)
}

// connsByID returns the server's connections in id order (Redis lists
// its clients oldest first).
func (s *Server) connsByID() []*conn {
	s.mu.Lock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		if !c.closed {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *conn) int { return int(a.id - b.id) })
	return out
}

// clientType is Redis' getClientType for a connection of this bridge:
// pubsub when it has a subscription, else normal (there are no
// replication links).
func (c *conn) clientType() string {
	if len(c.s.hub.names(c, false)) > 0 || len(c.s.hub.names(c, true)) > 0 {
		return "pubsub"
	}
	return "normal"
}

// clientTypeName is Redis' getClientTypeByName; "" when unknown.
func clientTypeName(b []byte) string {
	switch s := strings.ToLower(string(b)); s {
	case "normal", "pubsub", "master":
		return s
	case "replica", "slave":
		return "replica"
	}
	return ""
}

// clientList: CLIENT LIST [TYPE type | ID id ...], as Redis 7.0 parses it.
func clientList(c *conn, args [][]byte) {
	conns := c.s.connsByID()
	var b strings.Builder
	switch {
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		typ := clientTypeName(args[3])
		if typ == "" {
			c.w.WriteError("ERR Unknown client type '" + string(clip(args[3])) + "'")
			return
		}
		for _, o := range conns {
			if o.clientType() == typ {
				b.WriteString(o.listLine(c))
			}
		}
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		ids := make([]int64, 0, len(args)-3)
		for _, a := range args[3:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				c.w.WriteError("ERR Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			for _, o := range conns {
				if o.id == id {
					b.WriteString(o.listLine(c))
				}
			}
		}
	case len(args) != 2:
		c.w.WriteError(msgSyntax)
		return
	default:
		for _, o := range conns {
			b.WriteString(o.listLine(c))
		}
	}
	c.w.WriteBulkString(b.String())
}

// killFilter is CLIENT KILL's parsed filters.
type killFilter struct {
	addr, laddr, user, typ string
	hasAddr, hasLaddr      bool
	hasUser                bool
	id                     int64
	skipme                 bool
}

func (f *killFilter) match(c, self *conn) bool {
	switch {
	case f.hasAddr && c.nc.RemoteAddr().String() != f.addr,
		f.hasLaddr && c.nc.LocalAddr().String() != f.laddr,
		f.typ != "" && c.clientType() != f.typ,
		f.id != 0 && c.id != f.id,
		f.hasUser && *c.acl.subUser.Load() != f.user,
		c == self && f.skipme:
		return false
	}
	return true
}

// clientKill: CLIENT KILL addr (old form: +OK, or an error when nothing
// matched; it may kill the caller) or CLIENT KILL filter value ... (the
// number killed; SKIPME yes by default), as Redis 7.0.
func clientKill(c *conn, args [][]byte) {
	f := killFilter{skipme: true}
	old := len(args) == 3
	if old {
		f.addr, f.hasAddr, f.skipme = string(args[2]), true, false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.w.WriteError(msgSyntax)
				return
			}
			v := args[i+1]
			switch strings.ToLower(string(args[i])) {
			case "id":
				id, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || id < 1 {
					c.w.WriteError("ERR client-id should be greater than 0")
					return
				}
				f.id = id
			case "type":
				if f.typ = clientTypeName(v); f.typ == "" {
					c.w.WriteError("ERR Unknown client type '" + string(clip(v)) + "'")
					return
				}
			case "addr":
				f.addr, f.hasAddr = string(v), true
			case "laddr":
				f.laddr, f.hasLaddr = string(v), true
			case "user":
				if !c.s.userExists(string(v)) {
					c.w.WriteError("ERR No such user '" + string(clip(v)) + "'")
					return
				}
				f.user, f.hasUser = string(v), true
			case "skipme":
				switch strings.ToLower(string(v)) {
				case "yes":
					f.skipme = true
				case "no":
					f.skipme = false
				default:
					c.w.WriteError(msgSyntax)
					return
				}
			default:
				c.w.WriteError(msgSyntax)
				return
			}
		}
	}
	killed := 0
	for _, o := range c.s.connsByID() {
		if !f.match(o, c) {
			continue
		}
		killed++
		if o == c {
			c.quit = true // after this reply, as Redis' CLOSE_AFTER_REPLY
			continue
		}
		o.shutdown()
	}
	switch {
	case !old:
		c.w.WriteInt(int64(killed))
	case killed == 0:
		c.w.WriteError("ERR No such client")
	default:
		c.w.WriteStatus("OK")
	}
}

// userExists reports whether name is a configured user (without users,
// only "default" exists).
func (s *Server) userExists(name string) bool {
	if s.users == nil {
		return name == auth.DefaultUser
	}
	return s.users.Users().Lookup(name) != nil
}
