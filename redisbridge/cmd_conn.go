package redisbridge

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/locknode/locknode/fsm/reply"
	"github.com/locknode/locknode/redisbridge/resp"
)

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// PING [message]; in RESP2 subscribe mode the reply is ["pong", message]
// (StackExchange.Redis checks it on its subscription connection).
func cmdPing(c *conn, args [][]byte) {
	if len(args) > 2 {
		c.w.WriteError(errArity("ping"))
		return
	}
	if c.w.Proto < 3 && c.s.hub.isSubscribed(c) {
		c.w.WriteArrayLen(2)
		c.w.WriteBulkString("pong")
		if len(args) == 2 {
			c.w.WriteBulk(args[1])
		} else {
			c.w.WriteBulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.w.WriteBulk(args[1])
		return
	}
	c.w.WriteStatus("PONG")
}

func cmdEcho(c *conn, args [][]byte) { c.w.WriteBulk(args[1]) }

func cmdQuit(c *conn, _ [][]byte) {
	c.w.WriteStatus("OK")
	c.quit = true
}

// RESET: back to a fresh connection's state (protocol 2, no name, no
// transaction, no subscriptions, the anonymous user), as in Redis.
func cmdReset(c *conn, _ [][]byte) {
	c.tx.reset()
	c.tx.unwatch()
	c.s.hub.unsubscribeAll(c)
	c.s.trk.disable(c)
	c.track.caching = false
	c.name = ""
	c.w.Proto = 2
	c.publishListed()
	c.acl.authed, c.acl.user = c.s.anonymous()
	c.acl.armAuthTimeout()
	user := c.acl.user
	c.acl.subUser.Store(&user)
	c.w.WriteStatus("RESET")
}

// AUTH [username] password
func cmdAuth(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.w.WriteError(msgSyntax)
		return
	}
	if len(args) == 2 && c.s.users == nil {
		c.w.WriteError(msgAuthNoPass)
		return
	}
	user, pass := []byte("default"), args[len(args)-1]
	if len(args) == 3 {
		user = args[1]
	}
	if !c.acl.login(user, pass) {
		c.w.WriteError(msgWrongPass)
		return
	}
	c.w.WriteStatus("OK")
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *conn, args [][]byte) {
	opts := struct {
		proto      int
		user, pass []byte
		auth       bool
		name       []byte
		setName    bool
	}{proto: c.w.Proto}
	if len(args) >= 2 {
		v, err := strconv.ParseInt(string(args[1]), 10, 64)
		if err != nil {
			c.w.WriteError(msgProtoNotInt)
			return
		}
		if v != 2 && v != 3 {
			c.w.WriteError(msgNoProto)
			return
		}
		opts.proto = int(v)
	}
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch opt := strings.ToLower(string(args[i])); {
		case opt == "auth" && more >= 2:
			opts.auth, opts.user, opts.pass = true, args[i+1], args[i+2]
			i += 2
		case opt == "setname" && more >= 1:
			opts.setName, opts.name = true, args[i+1]
			i++
		default:
			c.w.WriteError("ERR Syntax error in HELLO option '" + string(clip(args[i])) + "'")
			return
		}
	}
	if opts.auth {
		if !c.acl.login(opts.user, opts.pass) {
			c.w.WriteError(msgWrongPass)
			return
		}
	}
	if !c.acl.authed {
		c.w.WriteError(msgHelloNoAuth)
		return
	}
	if opts.setName {
		if !validClientName(opts.name) {
			c.w.WriteError(msgBadClientName)
			return
		}
		c.name = string(opts.name)
	}
	c.w.Proto = opts.proto
	c.publishListed()
	c.w.WriteMapLen(7)
	c.w.WriteBulkString("server")
	c.w.WriteBulkString("redis")
	c.w.WriteBulkString("version")
	c.w.WriteBulkString(c.s.cfg.Version)
	c.w.WriteBulkString("proto")
	c.w.WriteInt(int64(c.w.Proto))
	c.w.WriteBulkString("id")
	c.w.WriteInt(c.id)
	c.w.WriteBulkString("mode")
	if c.s.cfg.Cluster {
		c.w.WriteBulkString("cluster")
	} else {
		c.w.WriteBulkString("standalone")
	}
	c.w.WriteBulkString("role")
	c.w.WriteBulkString("master")
	c.w.WriteBulkString("modules")
	c.w.WriteArrayLen(0)
}

// SELECT index: one logical database, 0.
func cmdSelect(c *conn, args [][]byte) {
	n, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil {
		c.w.WriteError(msgNotInt)
		return
	}
	if n != 0 {
		c.w.WriteError(msgDBRange)
		return
	}
	c.w.WriteStatus("OK")
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// CLIENT SETNAME|GETNAME|SETINFO|ID|INFO
func cmdClient(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	want, ok := clientArity[sub]
	if !ok {
		c.w.WriteError(unknownSubcommand(args[1], "client"))
		return
	}
	if (want >= 0 && len(args) != want) || (want < 0 && len(args) < -want) {
		c.w.WriteError(errArity("client|" + sub))
		return
	}
	switch sub {
	case "list":
		clientList(c, args)
	case "kill":
		clientKill(c, args)
	case "tracking":
		clientTracking(c, args)
	case "caching":
		clientCaching(c, args)
	case "getredir":
		clientGetRedir(c)
	case "trackinginfo":
		clientTrackingInfo(c)
	case "no-evict":
		switch strings.ToLower(string(args[2])) {
		case "on", "off":
			c.w.WriteStatus("OK")
		default:
			c.w.WriteError(msgSyntax)
		}
	case "help":
		c.w.WriteArrayLen(len(clientHelp))
		for _, l := range clientHelp {
			c.w.WriteStatus(l)
		}
	case "setname":
		if !validClientName(args[2]) {
			c.w.WriteError(msgBadClientName)
			return
		}
		c.name = string(args[2])
		c.publishListed()
		c.w.WriteStatus("OK")
	case "getname":
		if c.name == "" {
			c.w.WriteNull()
			return
		}
		c.w.WriteBulkString(c.name)
	case "setinfo":
		switch strings.ToLower(string(args[2])) {
		case "lib-name", "lib-ver":
			c.w.WriteStatus("OK")
		default:
			c.w.WriteError("ERR Unrecognized option '" + string(clip(args[2])) + "'")
		}
	case "id":
		c.w.WriteInt(c.id)
	case "info":
		c.w.WriteBulkString(c.clientInfo())
	}
}

// clientInfo is CLIENT INFO's line: Redis' fields for this connection's
// identity and memory (qbuf, argv-mem: input buffers; obl: unflushed
// replies; oll, omem: pub/sub messages pending; tot-mem: their sum). Call
// from serve.
func (c *conn) clientInfo() string {
	sub := c.s.hub.names(c, false)
	psub := c.s.hub.names(c, true)
	multi := -1
	if c.tx.active {
		multi = len(c.tx.queue)
	}
	qbuf := c.rd.Buffered()
	argv := c.rd.ArgsMemory()
	oll, omem := c.out.queued()
	tot := c.rd.Size() + argv + c.w.Size() + int(omem)
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s db=0 sub=%d psub=%d ssub=0 multi=%d "+
		"qbuf=%d qbuf-free=%d argv-mem=%d obl=%d oll=%d omem=%d tot-mem=%d resp=%d\n",
		c.id, c.nc.RemoteAddr(), c.nc.LocalAddr(), c.name, len(sub), len(psub), multi,
		qbuf, c.rd.Size()-qbuf, argv, c.w.Buffered(), oll, omem, tot, c.w.Proto)
}

// selfAddr is the RESP address clients reach this node at: the local end
// of this connection (right even when listening on 0.0.0.0).
func (c *conn) selfAddr() string {
	if a := c.nc.LocalAddr(); a != nil {
		return a.String()
	}
	return c.s.cfg.Addr
}

func splitHostPort(addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return h, p
}

// INFO [section ...]: the sections clients parse (redis_version, role,
// loading, aof_enabled, connected_slaves) plus "# Locknode".
func cmdInfo(c *conn, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b bytes.Buffer
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	_, port := splitHostPort(c.selfAddr())
	uptime := int64(time.Since(c.s.started) / time.Second)
	mode, enabled := "standalone", "0"
	if c.s.cfg.Cluster {
		mode, enabled = "cluster", "1"
	}
	section("Server",
		"redis_version:"+c.s.cfg.Version,
		"redis_mode:"+mode,
		"os:locknode",
		"arch_bits:64",
		"run_id:"+c.s.cfg.RunID,
		"tcp_port:"+port,
		"uptime_in_seconds:"+strconv.FormatInt(uptime, 10),
		"uptime_in_days:"+strconv.FormatInt(uptime/86400, 10),
	)
	c.s.mu.Lock()
	nconns := len(c.s.conns)
	c.s.mu.Unlock()
	section("Clients",
		"connected_clients:"+strconv.Itoa(nconns),
		"maxclients:"+strconv.Itoa(c.s.cfg.MaxConns),
		"blocked_clients:0",
	)
	if all || want["memory"] {
		ctx, cancel := context.WithTimeout(c.s.baseCtx, time.Second)
		st, err := c.s.b.Status(ctx)
		cancel()
		if err == nil {
			section("Memory", memoryInfo(st.KeyspaceBytes, st.KeyspaceMaxBytes)...)
		}
	}
	section("Persistence",
		"loading:0",
		"async_loading:0",
		"aof_enabled:0",
		"rdb_bgsave_in_progress:0",
	)
	section("Replication",
		"role:master",
		"connected_slaves:0",
		"master_failover_state:no-failover",
	)
	section("Cluster", "cluster_enabled:"+enabled)
	if all || want["keyspace"] {
		if lines, ok := c.s.keyspaceInfo(c.acl.keyFilter()); ok {
			section("Keyspace", lines...)
		}
	}
	if all || want["locknode"] {
		lines := []string{"node_id:" + c.s.cfg.NodeID, "cluster_members:" + strconv.Itoa(len(c.s.peers(c.selfAddr())))}
		ctx, cancel := context.WithTimeout(c.s.baseCtx, time.Second)
		st, err := c.s.b.Status(ctx)
		cancel()
		if err == nil {
			lines = append(lines,
				"raft_state:"+st.State,
				"leader_id:"+st.Leader,
				"term:"+strconv.FormatUint(st.Term, 10),
				"applied_index:"+strconv.FormatUint(st.AppliedIndex, 10),
				"commit_index:"+strconv.FormatUint(st.CommitIndex, 10),
				"locks:"+strconv.Itoa(st.Locks),
				"keys:"+strconv.Itoa(st.Keys),
				"waiters:"+strconv.Itoa(st.Waiters),
				"sessions:"+strconv.Itoa(st.Sessions),
				"cluster_version:"+strconv.FormatUint(uint64(st.ClusterVersion), 10),
			)
		}
		section("Locknode", lines...)
	}
	if c.s.cfg.ExtraInfo != nil {
		for _, sec := range parseInfoSections(c.s.cfg.ExtraInfo()) {
			section(sec.name, sec.lines...)
		}
	}
	if b.Len() > 0 {
		b.WriteString("\r\n")
	}
	c.w.WriteBulk(b.Bytes())
}

// CONFIG GET pattern [pattern ...]: the parameters clients ask for at
// connect; unknown ones are simply absent (an empty reply, as Redis).
func cmdConfig(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	if sub == "set" {
		configSet(c, args)
		return
	}
	if sub != "get" {
		if sub == "resetstat" || sub == "rewrite" {
			c.w.WriteError("ERR locknode: CONFIG " + strings.ToUpper(sub) + " is not supported")
			return
		}
		c.w.WriteError(unknownSubcommand(args[1], "config"))
		return
	}
	if len(args) < 3 {
		c.w.WriteError(errArity("config|get"))
		return
	}
	timeout := "0"
	if d := c.s.cfg.IdleTimeout; d > 0 {
		// Whole seconds, rounded up: a sub-second timeout must not read
		// as 0, which is "never".
		timeout = strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
	}
	params := [][2]string{
		{"databases", "1"},
		{"maxclients", strconv.Itoa(c.s.cfg.MaxConns)},
		{"replica-read-only", "yes"},
		{"slave-read-only", "yes"},
		{"timeout", timeout},
		{"appendonly", "no"},
		{"cluster-enabled", yesNo(c.s.cfg.Cluster)},
	}
	slower, maxLen := c.s.slow.get()
	params = append(params,
		[2]string{"slowlog-log-slower-than", strconv.FormatInt(slower, 10)},
		[2]string{"slowlog-max-len", strconv.Itoa(maxLen)},
		[2]string{"notify-keyspace-events", notifyFlags(c.s.notify.Load()).String()})
	var out [][2]string
	for _, p := range params {
		for _, pat := range args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(pat)), p[0]); ok {
				out = append(out, p)
				break
			}
		}
	}
	c.w.WriteMapLen(len(out))
	for _, p := range out {
		c.w.WriteBulkString(p[0])
		c.w.WriteBulkString(p[1])
	}
}

// WAIT numreplicas timeout: waits until this connection's last write is
// committed, then replies the number of other members (a committed entry
// is on a quorum and reaches every live member). 0 when the wait times
// out, as Redis replies the replicas that acknowledged in time.
func cmdWait(c *conn, args [][]byte) {
	if _, err := strconv.ParseInt(string(args[1]), 10, 64); err != nil {
		c.w.WriteError(msgNotInt)
		return
	}
	ms, ok := waitTimeout(c.w, args[2])
	if !ok {
		return
	}
	c.w.WriteInt(c.waitReplicas(ms))
}

// waitTimeout parses the timeout of WAIT and WAITAOF (milliseconds, 0 for
// no limit), replying the error and false when it is not one.
func waitTimeout(w *resp.Writer, arg []byte) (int64, bool) {
	ms, err := strconv.ParseInt(string(arg), 10, 64)
	if err != nil {
		w.WriteError(msgTimeoutNotInt)
		return 0, false
	}
	if ms < 0 {
		w.WriteError(msgTimeoutNeg)
		return 0, false
	}
	return ms, true
}

func (c *conn) waitReplicas(ms int64) int64 {
	ctx, cancel := context.WithCancel(c.s.baseCtx)
	if ms > 0 {
		ctx, cancel = context.WithTimeout(c.s.baseCtx, time.Duration(ms)*time.Millisecond)
	}
	defer cancel()
	if c.lastWrite > 0 {
		if err := c.s.b.WaitCommitted(ctx, c.lastWrite); err != nil {
			return 0
		}
	}
	return int64(len(c.s.peers(c.selfAddr())) - 1)
}

// WAITAOF numlocal numreplicas timeout -> [1, replicas]: the log is
// fsynced locally before an entry commits.
func cmdWaitAOF(c *conn, args [][]byte) {
	for _, a := range args[1:3] {
		if _, err := strconv.ParseInt(string(a), 10, 64); err != nil {
			c.w.WriteError(msgNotInt)
			return
		}
	}
	ms, ok := waitTimeout(c.w, args[3])
	if !ok {
		return
	}
	n := c.waitReplicas(ms)
	c.w.WriteReply(reply.NewArray(reply.NewInt(1), reply.NewInt(n)))
}
