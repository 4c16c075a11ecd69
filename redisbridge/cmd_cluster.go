package redisbridge

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locknode/locknode/auth"
)

// The Redis Cluster interface (Config.Cluster). One raft group is one
// shard that owns every slot: its master is the raft leader's RESP
// address, its replicas the other reachable members. Cluster clients
// (go-redis ClusterClient, rueidis, redis-py RedisCluster, ioredis
// Cluster) read the topology from CLUSTER SLOTS or SHARDS and send every
// keyed command to the master.
//
// A follower answers a keyed command with MOVED <slot> <leader>, as a
// Redis replica does, when it knows a reachable leader with an address;
// a connection that sent READONLY has its reads served (linearizably)
// where it sent them. That is how rueidis, redis-py and ioredis, which
// do not refresh their topology on a timer by default, learn that the
// leader moved while the old one still answers (a leadership transfer, a
// restarted node): served by forwarding, they would stay on a follower
// indefinitely.
// Without a known leader (an election) the node serves the command
// itself: it forwards once a leader exists, or answers TRYAGAIN, and
// never points a client at nobody. docs/redis.md "Redis Cluster clients"
// says which client does what.
//
// Node IDs are 40 hex digits derived from the raft server id, so they
// are stable across restarts and the same on every node. Epochs are the
// raft term.
//
//	CLUSTER SHARDS | SLOTS | NODES | INFO | MYID | MYSHARDID
//	CLUSTER KEYSLOT key
//	CLUSTER COUNTKEYSINSLOT slot          (walks the key space)
//	CLUSTER GETKEYSINSLOT slot count      (walks the key space)
//	CLUSTER HELP
//	READONLY, READWRITE, ASKING           -> OK

// Wire texts of the Cluster interface (Redis' own).
const (
	msgCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	msgInvalidSlot     = "ERR Invalid slot"
	msgInvalidSlotKeys = "ERR Invalid slot or number of keys"
	// msgClusterManaged refuses the subcommands that change a Redis
	// cluster's membership or slot map: raft owns both here.
	msgClusterManaged = "ERR locknode: CLUSTER %s is not supported: membership is the raft group's (locknode join, locknode remove) and one shard owns every slot"
)

// clusterArity is each read-only subcommand's exact argument count,
// CLUSTER included.
var clusterArity = map[string]int{
	"shards": 2, "slots": 2, "nodes": 2, "info": 2, "myid": 2, "myshardid": 2,
	"keyslot": 3, "countkeysinslot": 3, "getkeysinslot": 4, "help": 2,
}

// clusterManaged are Redis' subcommands that change the cluster.
var clusterManaged = map[string]bool{
	"addslots": true, "addslotsrange": true, "delslots": true, "delslotsrange": true,
	"meet": true, "forget": true, "replicate": true, "failover": true, "reset": true,
	"setslot": true, "flushslots": true, "saveconfig": true, "bumpepoch": true,
	"set-config-epoch": true,
}

func cmdCluster(c *conn, args [][]byte) {
	if !c.s.cfg.Cluster {
		c.w.WriteError(msgNoCluster)
		return
	}
	sub := strings.ToLower(string(args[1]))
	if clusterManaged[sub] {
		c.w.WriteError(fmt.Sprintf(msgClusterManaged, strings.ToUpper(sub)))
		return
	}
	want, ok := clusterArity[sub]
	if !ok {
		c.w.WriteError(unknownSubcommand(args[1], "cluster"))
		return
	}
	if len(args) != want {
		c.w.WriteError(errArity("cluster|" + sub))
		return
	}
	switch sub {
	case "keyslot":
		c.w.WriteInt(int64(keySlot(args[2])))
	case "countkeysinslot":
		slot, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err != nil {
			c.w.WriteError(msgNotInt)
			return
		}
		if slot < 0 || slot >= numSlots {
			c.w.WriteError(msgInvalidSlot)
			return
		}
		keys, ok := c.keysInSlot(int(slot), -1)
		if ok {
			c.w.WriteInt(int64(len(keys)))
		}
	case "getkeysinslot":
		// Redis parses the count first, then the slot.
		count, err := strconv.ParseInt(string(args[3]), 10, 64)
		if err != nil {
			c.w.WriteError(msgNotInt)
			return
		}
		slot, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err != nil {
			c.w.WriteError(msgNotInt)
			return
		}
		if count < 0 || slot < 0 || slot >= numSlots {
			c.w.WriteError(msgInvalidSlotKeys)
			return
		}
		keys, ok := c.keysInSlot(int(slot), count)
		if !ok {
			return
		}
		c.w.WriteArrayLen(len(keys))
		for _, k := range keys {
			c.w.WriteBulkString(k)
		}
	case "myid":
		c.w.WriteBulkString(clusterNodeID(c.s.cfg.NodeID))
	case "myshardid":
		c.w.WriteBulkString(shardID)
	case "help":
		c.w.WriteArrayLen(len(clusterHelp))
		for _, l := range clusterHelp {
			c.w.WriteStatus(l)
		}
	default:
		top := c.topology()
		switch sub {
		case "slots":
			top.writeSlots(c)
		case "shards":
			top.writeShards(c)
		case "nodes":
			c.w.WriteBulkString(top.nodesText())
		case "info":
			c.w.WriteBulkString(top.infoText())
		}
	}
}

var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
	"INFO", "    Return information about the cluster.",
	"KEYSLOT <key>", "    Return the hash slot for <key>.",
	"MYID", "    Return the node id.",
	"MYSHARDID", "    Return the node's shard id.",
	"NODES", "    Return cluster configuration seen by node.",
	"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
	"SLOTS", "    Return information about slots range mappings.",
	"HELP", "    Print this help.",
}

// clusterNodeID is the 40-hex Redis Cluster node id of raft server id.
func clusterNodeID(raftID string) string {
	return sha1hex([]byte("locknode-cluster-node:" + raftID))
}

// shardID names the one shard (CLUSTER MYSHARDID).
var shardID = sha1hex([]byte("locknode-cluster-shard:0"))

// keysInSlot returns the keys of slot the caller may see, at most limit
// (negative: all), read linearizably; false after writing the error.
func (c *conn) keysInSlot(slot int, limit int64) ([]string, bool) {
	all, ok := c.liveKeys()
	if !ok {
		return nil, false
	}
	var out []string
	for _, e := range all {
		if limit >= 0 && int64(len(out)) >= limit {
			break
		}
		if keySlot([]byte(e.Key)) == slot {
			out = append(out, e.Key)
		}
	}
	slices.Sort(out)
	return out, true
}

// clusterNode is one member as the Cluster interface shows it.
type clusterNode struct {
	id         string // 40 hex
	host       string
	port       int
	busPort    int
	self       bool
	master     bool
	reachable  bool
	ownsLeader bool // the master because it is the raft leader
}

// topology is the shard as this node sees it now: the master first,
// then the replicas, then unreachable members, each group by id.
type topology struct {
	nodes  []clusterNode
	term   uint64
	leader bool // a reachable leader is the master (else this node is)
}

// topology reads the raft leader and term and the members' addresses.
// Without a reachable leader (an election, or the leader just died) this
// node names itself master: it is alive and serves by forwarding, while
// the address of a dead leader would only cost the client a failed dial.
func (c *conn) topology() topology {
	ctx, cancel := context.WithTimeout(c.s.baseCtx, time.Second)
	st, err := c.s.b.Status(ctx)
	cancel()
	// The addresses may be a second old (memberCacheTTL); the leader and
	// the term are read now.
	members := slices.Clone(c.s.cachedMembers())
	selfID := c.s.cfg.NodeID
	if !slices.ContainsFunc(members, func(m Member) bool { return m.ID == selfID }) {
		members = append(members, Member{ID: selfID})
	}
	var t topology
	if err == nil {
		t.term = st.Term
	}
	for _, m := range members {
		self := m.ID == selfID
		addr := m.RESP
		if self {
			m.Reachable = true
			if addr == "" {
				addr = c.selfAddr()
			}
		}
		if addr == "" {
			continue // never answered: no address to give a client
		}
		host, port := splitHostPort(addr)
		n := clusterNode{id: clusterNodeID(m.ID), host: host, port: atoiOr0(port), self: self, reachable: m.Reachable}
		if _, bp, err := net.SplitHostPort(m.Raft); err == nil {
			n.busPort = atoiOr0(bp)
		}
		if err == nil && st.Leader != "" && m.ID == st.Leader && n.reachable {
			n.master, n.ownsLeader, t.leader = true, true, true
		}
		t.nodes = append(t.nodes, n)
	}
	if !t.leader {
		for i := range t.nodes {
			t.nodes[i].master = t.nodes[i].self
		}
	}
	rank := func(n clusterNode) int {
		switch {
		case n.master:
			return 0
		case n.reachable:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(t.nodes, func(a, b clusterNode) int {
		if r := rank(a) - rank(b); r != 0 {
			return r
		}
		return strings.Compare(a.id, b.id)
	})
	return t
}

func atoiOr0(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// writeSlots: [[0, 16383, master, replica...]], each node [ip, port, id,
// {}] (Redis 7's empty networking metadata); unreachable members are
// left out, as Redis leaves out failed replicas.
func (t topology) writeSlots(c *conn) {
	var live []clusterNode
	for _, n := range t.nodes {
		if n.reachable {
			live = append(live, n)
		}
	}
	c.w.WriteArrayLen(1)
	c.w.WriteArrayLen(2 + len(live))
	c.w.WriteInt(0)
	c.w.WriteInt(numSlots - 1)
	for _, n := range live {
		c.w.WriteArrayLen(4)
		c.w.WriteBulkString(n.host)
		c.w.WriteInt(int64(n.port))
		c.w.WriteBulkString(n.id)
		c.w.WriteMapLen(0)
	}
}

// writeShards: one shard {slots: [0, 16383], nodes: [...]}, each node
// with Redis 7's fields; an unreachable member has health "fail".
func (t topology) writeShards(c *conn) {
	c.w.WriteArrayLen(1)
	c.w.WriteMapLen(2)
	c.w.WriteBulkString("slots")
	c.w.WriteArrayLen(2)
	c.w.WriteInt(0)
	c.w.WriteInt(numSlots - 1)
	c.w.WriteBulkString("nodes")
	c.w.WriteArrayLen(len(t.nodes))
	for _, n := range t.nodes {
		role, health := "replica", "online"
		if n.master {
			role = "master"
		}
		if !n.reachable {
			health = "fail"
		}
		c.w.WriteMapLen(7)
		c.w.WriteBulkString("id")
		c.w.WriteBulkString(n.id)
		c.w.WriteBulkString("port")
		c.w.WriteInt(int64(n.port))
		c.w.WriteBulkString("ip")
		c.w.WriteBulkString(n.host)
		c.w.WriteBulkString("endpoint")
		c.w.WriteBulkString(n.host)
		c.w.WriteBulkString("role")
		c.w.WriteBulkString(role)
		c.w.WriteBulkString("replication-offset")
		c.w.WriteInt(0)
		c.w.WriteBulkString("health")
		c.w.WriteBulkString(health)
	}
}

// nodesText is CLUSTER NODES: one line per member, "id ip:port@bus
// flags master-id ping pong epoch link slots".
func (t topology) nodesText() string {
	var master string
	for _, n := range t.nodes {
		if n.master {
			master = n.id
		}
	}
	var b strings.Builder
	for _, n := range t.nodes {
		var flags []string
		if n.self {
			flags = append(flags, "myself")
		}
		of := master
		if n.master {
			flags = append(flags, "master")
			of = "-"
		} else {
			flags = append(flags, "slave")
		}
		link := "connected"
		if !n.reachable {
			flags = append(flags, "fail")
			link = "disconnected"
		}
		b.WriteString(n.id + " " + net.JoinHostPort(n.host, strconv.Itoa(n.port)) + "@" + strconv.Itoa(n.busPort) +
			" " + strings.Join(flags, ",") + " " + of + " 0 0 " + strconv.FormatUint(t.term, 10) + " " + link)
		if n.master {
			b.WriteString(" 0-" + strconv.Itoa(numSlots-1))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// infoText is CLUSTER INFO. cluster_state is fail while no leader is
// reachable (writes then answer TRYAGAIN); there are no gossip messages.
func (t topology) infoText() string {
	state := "ok"
	if !t.leader {
		state = "fail"
	}
	term := strconv.FormatUint(t.term, 10)
	lines := []string{
		"cluster_state:" + state,
		"cluster_slots_assigned:16384",
		"cluster_slots_ok:16384",
		"cluster_slots_pfail:0",
		"cluster_slots_fail:0",
		"cluster_known_nodes:" + strconv.Itoa(len(t.nodes)),
		"cluster_size:1",
		"cluster_current_epoch:" + term,
		"cluster_my_epoch:" + term,
		"cluster_stats_messages_sent:0",
		"cluster_stats_messages_received:0",
		"total_cluster_links_buffer_limit_exceeded:0",
	}
	return strings.Join(lines, "\r\n") + "\r\n"
}

// cmdAsking: ASKING is only meaningful while a slot migrates, which one
// shard never does.
func cmdAsking(c *conn, _ [][]byte) {
	if !c.s.cfg.Cluster {
		c.w.WriteError(msgNoCluster)
		return
	}
	c.w.WriteStatus("OK")
}

// cmdReadonly: READONLY lets this connection's reads run on a follower
// in cluster mode (instead of MOVED); outside it, a no-op.
func cmdReadonly(c *conn, _ [][]byte) {
	c.readonly = true
	c.w.WriteStatus("OK")
}

func cmdReadwrite(c *conn, _ [][]byte) {
	c.readonly = false
	c.w.WriteStatus("OK")
}

// leaderLookup is a Backend that names the raft leader without building
// a whole Status (*cluster.Node): the MOVED check runs per command.
type leaderLookup interface {
	Leader() (id, addr string)
}

// memberCacheTTL is how long the MOVED check reuses Config.Members'
// answer: reading the raft configuration takes a trip through raft's
// main loop, too much per command; a new leader is found by id at once,
// only its address comes from the cache.
const memberCacheTTL = time.Second

// memberCache holds Config.Members' last answer for the MOVED check.
type memberCache struct {
	mu   sync.Mutex
	at   time.Time
	list []Member
}

func (s *Server) cachedMembers() []Member {
	mc := &s.members
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if s.cfg.Members != nil && (mc.list == nil || time.Since(mc.at) >= memberCacheTTL) {
		mc.list, mc.at = s.cfg.Members(), time.Now()
	}
	return mc.list
}

// leaderRESP returns the RESP address of the raft leader when another
// member leads and is reachable with a known address; ok false when this
// node leads, or no such leader is known (the node then serves).
func (s *Server) leaderRESP() (addr string, ok bool) {
	var id string
	if l, isL := s.b.(leaderLookup); isL {
		id, _ = l.Leader()
	} else {
		ctx, cancel := context.WithTimeout(s.baseCtx, time.Second)
		st, err := s.b.Status(ctx)
		cancel()
		if err != nil {
			return "", false
		}
		id = st.Leader
	}
	if id == "" || id == s.cfg.NodeID {
		return "", false
	}
	for _, m := range s.cachedMembers() {
		if m.ID == id && m.Reachable && m.RESP != "" {
			return m.RESP, true
		}
	}
	return "", false
}

// moved returns the MOVED reply for a keyed command on a follower in
// cluster mode (reads of a READONLY connection excepted), else "".
func (c *conn) moved(cmd *command, name string, args [][]byte) string {
	if !c.s.cfg.Cluster || len(args) < 2 {
		return ""
	}
	addr, ok := c.s.leaderRESP()
	if !ok {
		return ""
	}
	a := accessOf(cmd, name, args)
	if len(a.keys) == 0 || (c.readonly && a.cat == auth.Read) {
		return ""
	}
	return "MOVED " + strconv.Itoa(keySlot(a.keys[0])) + " " + addr
}

// crossSlot returns msgCrossSlot when cluster mode is on and the keys
// args names (by the command's key positions) hash to different slots,
// else "". slot is the keys' slot (-1: none).
func (s *Server) crossSlot(cmd *command, name string, args [][]byte) (slot int, msg string) {
	if !s.cfg.Cluster || len(args) < 3 {
		return -1, "" // at most one key
	}
	slot, ok := sameSlot(cmd.spec.KeyArgs(args))
	if !ok {
		return slot, msgCrossSlot
	}
	return slot, ""
}
