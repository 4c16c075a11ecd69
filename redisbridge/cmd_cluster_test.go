package redisbridge

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/redisbridge/resp"
)

// leaderBackend is the fake with the raft leader and term it reports
// settable: what a member of a raft group sees as elections happen.
type leaderBackend struct {
	*fakeBackend
	mu     sync.Mutex
	leader string
	term   uint64
}

func (b *leaderBackend) set(leader string, term uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader, b.term = leader, term
}

func (b *leaderBackend) Leader() (id, addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leader, ""
}

func (b *leaderBackend) Status(ctx context.Context) (api.Status, error) {
	st, err := b.fakeBackend.Status(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	st.Leader, st.Term = b.leader, b.term
	return st, err
}

// clusterServer is a bridge in cluster mode, node "n2" of members n1..n3
// (n3 unreachable unless all), whose leader is n1 at term 7.
func clusterServer(t *testing.T, all bool) (*Server, *leaderBackend) {
	t.Helper()
	b := &leaderBackend{fakeBackend: newFakeBackend(t), leader: "n1", term: 7}
	ln := listenLocal(t)
	self := ln.Addr().String()
	members := func() []Member {
		return []Member{
			{ID: "n1", RESP: "10.0.0.1:6379", Raft: "10.0.0.1:7000", Reachable: true},
			{ID: "n2", RESP: self, Raft: "127.0.0.1:7002", Reachable: true},
			{ID: "n3", RESP: "10.0.0.3:6379", Raft: "10.0.0.3:7000", Reachable: all},
			{ID: "n4"}, // never answered: no address, left out
		}
	}
	s := testServerOnListener(t, b, Config{NodeID: "n2", Cluster: true, Members: members, Addr: self}, ln)
	return s, b
}

func TestKeySlot(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot int
	}{
		// Slots as a Redis 7 cluster answers CLUSTER KEYSLOT.
		{"x", 16287}, {"y", 12222}, {"z", 8157}, {"w", 3696}, {"k1", 12706}, {"k2", 449},
		{"{user1}:x", 8106}, {"123456789", 12739}, {"", 0},
	} {
		if got := keySlot([]byte(c.key)); got != c.slot {
			t.Errorf("keySlot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
	// Hash tags, by Redis' rules.
	same := func(a, b string) bool { return keySlot([]byte(a)) == keySlot([]byte(b)) }
	for _, c := range []struct {
		key, hashed string
	}{
		{"{user1}.following", "user1"},
		{"foo{bar}{zap}", "bar"},
		{"foo{}{bar}", "foo{}{bar}"}, // empty tag: the whole key
		{"foo{{bar}}zap", "{bar"},
		{"{bar", "{bar"}, // no closing brace
		{"}{x}", "x"},
	} {
		if !same(c.key, c.hashed) {
			t.Errorf("%q does not hash as %q", c.key, c.hashed)
		}
	}
}

func TestClusterModeOff(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	for _, cmd := range [][]string{{"CLUSTER", "SLOTS"}, {"CLUSTER", "KEYSLOT", "x"}, {"ASKING"}} {
		if v := c.do(cmd...); v.Type != '-' || v.Str != msgNoCluster {
			t.Errorf("%v = %v, want %q", cmd, v, msgNoCluster)
		}
	}
	if v := c.do("MSET", "x", "1", "y", "2"); v.Str != "OK" {
		t.Errorf("MSET across slots off cluster mode = %v", v)
	}
	if v := c.do("INFO", "cluster"); !strings.Contains(v.Str, "cluster_enabled:0") {
		t.Errorf("INFO cluster = %q", v.Str)
	}
	if v := c.do("CONFIG", "GET", "cluster-enabled"); len(v.Elems) != 2 || v.Elems[1].Str != "no" {
		t.Errorf("CONFIG GET cluster-enabled = %v", v)
	}
}

// fields returns a map reply's (RESP2: flat array's) values by key.
func fields(t *testing.T, v resp.Value) map[string]resp.Value {
	t.Helper()
	if len(v.Elems)%2 != 0 {
		t.Fatalf("not a map: %v", v)
	}
	m := map[string]resp.Value{}
	for i := 0; i < len(v.Elems); i += 2 {
		m[v.Elems[i].Str] = v.Elems[i+1]
	}
	return m
}

// TestClusterTopology: one shard of every slot whose master is the
// leader's address, the reachable others replicas; an unreachable member
// is left out of SLOTS, failed in SHARDS and NODES; a leader change
// changes the master; no leader makes this node the master.
func TestClusterTopology(t *testing.T) {
	s, b := clusterServer(t, false)
	c := dialRaw(t, s)
	self := s.Addr()
	selfHost, _ := splitHostPort(self)
	id := func(raft string) string { return clusterNodeID(raft) }

	slotsNodes := func() []string {
		t.Helper()
		v := c.do("CLUSTER", "SLOTS")
		if len(v.Elems) != 1 || len(v.Elems[0].Elems) < 3 {
			t.Fatalf("CLUSTER SLOTS = %v", v)
		}
		r := v.Elems[0].Elems
		if r[0].Int != 0 || r[1].Int != 16383 {
			t.Fatalf("slot range %v-%v", r[0], r[1])
		}
		var out []string
		for _, n := range r[2:] {
			if len(n.Elems) != 4 || n.Elems[1].Type != ':' || len(n.Elems[2].Str) != 40 || n.Elems[3].Type != '*' {
				t.Fatalf("node entry %v", n)
			}
			out = append(out, fmt.Sprintf("%s:%d", n.Elems[0].Str, n.Elems[1].Int))
		}
		return out
	}
	if got, want := slotsNodes(), []string{"10.0.0.1:6379", self}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("SLOTS nodes %v, want %v (n3 unreachable, n4 without address)", got, want)
	}

	v := c.do("CLUSTER", "SHARDS")
	if len(v.Elems) != 1 {
		t.Fatalf("SHARDS = %v", v)
	}
	shard := fields(t, v.Elems[0])
	if sl := shard["slots"]; len(sl.Elems) != 2 || sl.Elems[0].Int != 0 || sl.Elems[1].Int != 16383 {
		t.Fatalf("shard slots %v", sl)
	}
	var roles []string
	for _, n := range shard["nodes"].Elems {
		f := fields(t, n)
		if len(f) != 7 || f["port"].Type != ':' || f["replication-offset"].Type != ':' {
			t.Fatalf("shard node %v", n)
		}
		roles = append(roles, f["ip"].Str+" "+f["role"].Str+" "+f["health"].Str)
	}
	if got, want := strings.Join(roles, ","), "10.0.0.1 master online,"+selfHost+" replica online,10.0.0.3 replica fail"; got != want {
		t.Fatalf("SHARDS nodes %q, want %q", got, want)
	}

	nodes := c.do("CLUSTER", "NODES").Str
	for _, want := range []string{
		id("n1") + " 10.0.0.1:6379@7000 master - 0 0 7 connected 0-16383\n",
		id("n2") + " " + self + "@7002 myself,slave " + id("n1") + " 0 0 7 connected\n",
		id("n3") + " 10.0.0.3:6379@7000 slave,fail " + id("n1") + " 0 0 7 disconnected\n",
	} {
		if !strings.Contains(nodes, want) {
			t.Errorf("CLUSTER NODES lacks %q:\n%s", want, nodes)
		}
	}
	if v := c.do("CLUSTER", "MYID"); v.Str != id("n2") {
		t.Errorf("MYID = %v", v)
	}
	info := c.do("CLUSTER", "INFO").Str
	for _, want := range []string{"cluster_state:ok\r\n", "cluster_known_nodes:3\r\n", "cluster_size:1\r\n", "cluster_current_epoch:7\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}

	// The leader changes to this node.
	b.set("n2", 8)
	if got, want := slotsNodes(), []string{self, "10.0.0.1:6379"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after n2 leads: SLOTS nodes %v, want %v", got, want)
	}
	// The leader is unreachable or unknown: this node names itself.
	for _, leader := range []string{"n3", ""} {
		b.set(leader, 9)
		if got := slotsNodes(); got[0] != self {
			t.Fatalf("leader %q: SLOTS master %v, want this node %s", leader, got, self)
		}
		if info := c.do("CLUSTER", "INFO").Str; !strings.Contains(info, "cluster_state:fail") {
			t.Fatalf("leader %q: CLUSTER INFO %q", leader, info)
		}
	}
	if v := c.do("INFO", "cluster"); !strings.Contains(v.Str, "cluster_enabled:1") {
		t.Errorf("INFO cluster = %q", v.Str)
	}
	if v := c.do("CONFIG", "GET", "cluster-enabled"); len(v.Elems) != 2 || v.Elems[1].Str != "yes" {
		t.Errorf("CONFIG GET cluster-enabled = %v", v)
	}
	for _, cmd := range []string{"ASKING", "READONLY", "READWRITE"} {
		if v := c.do(cmd); v.Str != "OK" {
			t.Errorf("%s = %v", cmd, v)
		}
	}
}

// TestClusterHostileInput: bad arguments get Redis' errors and change
// nothing; the connection keeps working.
func TestClusterHostileInput(t *testing.T) {
	s, b := clusterServer(t, true)
	b.set("n2", 7)
	c := dialRaw(t, s)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLUSTER"}, "ERR wrong number of arguments for 'cluster' command"},
		{[]string{"CLUSTER", "KEYSLOT"}, "ERR wrong number of arguments for 'cluster|keyslot' command"},
		{[]string{"CLUSTER", "KEYSLOT", "a", "b"}, "ERR wrong number of arguments for 'cluster|keyslot' command"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "-1", "5"}, msgInvalidSlotKeys},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "5", "-1"}, msgInvalidSlotKeys},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "16384", "5"}, msgInvalidSlotKeys},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "5", "x"}, msgNotInt},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "5", "99999999999999999999999"}, msgNotInt},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "99999"}, msgInvalidSlot},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "-1"}, msgInvalidSlot},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "x"}, msgNotInt},
		{[]string{"CLUSTER", "FOO"}, "ERR unknown subcommand 'FOO'. Try CLUSTER HELP."},
		{[]string{"CLUSTER", "ADDSLOTS", "1"}, "ERR locknode: CLUSTER ADDSLOTS is not supported"},
		{[]string{"CLUSTER", "FAILOVER"}, "ERR locknode: CLUSTER FAILOVER is not supported"},
		{[]string{"CLUSTER", "SLOTS", "extra"}, "ERR wrong number of arguments for 'cluster|slots' command"},
	} {
		v := c.do(tc.args...)
		if v.Type != '-' || !strings.HasPrefix(v.Str, tc.want) {
			t.Errorf("%q = %v, want error %q", tc.args, v, tc.want)
		}
	}
	// A huge count is only a bound.
	if v := c.do("SET", "{s}a", "1"); v.Str != "OK" {
		t.Fatal(v)
	}
	slot := fmt.Sprint(keySlot([]byte("s")))
	if v := c.do("CLUSTER", "GETKEYSINSLOT", slot, "9223372036854775807"); len(v.Elems) != 1 || v.Elems[0].Str != "{s}a" {
		t.Errorf("GETKEYSINSLOT huge count = %v", v)
	}
	if v := c.do("PING"); v.Str != "PONG" {
		t.Errorf("PING after the bad input = %v", v)
	}
}

// TestClusterKeysInSlot: COUNTKEYSINSLOT and GETKEYSINSLOT see the keys
// of one slot, GETKEYSINSLOT at most count of them.
func TestClusterKeysInSlot(t *testing.T) {
	s, b := clusterServer(t, true)
	b.set("n2", 7)
	c := dialRaw(t, s)
	for _, k := range []string{"{t}1", "{t}2", "{t}3", "other"} {
		if v := c.do("SET", k, "v"); v.Str != "OK" {
			t.Fatal(v)
		}
	}
	slot := fmt.Sprint(keySlot([]byte("t")))
	if v := c.do("CLUSTER", "KEYSLOT", "{t}9"); fmt.Sprint(v.Int) != slot {
		t.Fatalf("KEYSLOT = %v, want %s", v, slot)
	}
	if v := c.do("CLUSTER", "COUNTKEYSINSLOT", slot); v.Int != 3 {
		t.Errorf("COUNTKEYSINSLOT = %v, want 3", v)
	}
	if v := c.do("CLUSTER", "GETKEYSINSLOT", slot, "2"); len(v.Elems) != 2 {
		t.Errorf("GETKEYSINSLOT count 2 = %v", v)
	}
	if v := c.do("CLUSTER", "GETKEYSINSLOT", slot, "0"); v.Type != '*' || len(v.Elems) != 0 {
		t.Errorf("GETKEYSINSLOT count 0 = %v", v)
	}
}

// TestClusterCrossSlot: multi-key commands, scripts, WATCH and MULTI
// blocks over keys of different slots answer CROSSSLOT and change
// nothing; over one slot (hash tags) they run.
func TestClusterCrossSlot(t *testing.T) {
	s, b := clusterServer(t, true)
	b.set("n2", 7)
	c := dialRaw(t, s)
	cross := func(args ...string) {
		t.Helper()
		if v := c.do(args...); v.Type != '-' || v.Str != msgCrossSlot {
			t.Errorf("%q = %v, want CROSSSLOT", args, v)
		}
	}
	cross("MSET", "x", "1", "y", "2")
	cross("DEL", "x", "y")
	cross("EVAL", "return redis.call('SET', KEYS[1], '1')", "2", "x", "y")
	cross("WATCH", "x", "y")
	if v := c.do("EXISTS", "x"); v.Int != 0 {
		t.Errorf("x exists after the refused MSET and EVAL")
	}
	if v := c.do("MSET", "{u}x", "1", "{u}y", "2"); v.Str != "OK" {
		t.Errorf("MSET in one slot = %v", v)
	}
	if v := c.do("EVAL", "return redis.call('DEL', KEYS[1], KEYS[2])", "2", "{u}x", "{u}y"); v.Int != 2 {
		t.Errorf("EVAL in one slot = %v", v)
	}
	// MULTI: each command queues, EXEC refuses the block, nothing runs.
	c.do("MULTI")
	for _, k := range []string{"x", "y"} {
		if v := c.do("SET", k, "1"); v.Str != "QUEUED" {
			t.Fatalf("SET %s in MULTI = %v", k, v)
		}
	}
	cross("EXEC")
	if v := c.do("EXISTS", "x", "{x}y"); v.Int != 0 {
		t.Errorf("the refused MULTI block ran")
	}
	// A cross-slot command inside MULTI aborts it.
	c.do("MULTI")
	cross("MSET", "x", "1", "y", "2")
	if v := c.do("EXEC"); !strings.HasPrefix(v.Str, "EXECABORT") {
		t.Errorf("EXEC after a CROSSSLOT while queueing = %v", v)
	}
	// One slot: the block runs.
	c.do("MULTI")
	c.do("SET", "{v}a", "1")
	c.do("SET", "{v}b", "1")
	if v := c.do("EXEC"); len(v.Elems) != 2 {
		t.Errorf("EXEC in one slot = %v", v)
	}

	// Pipelined (the group-commit path) as a cluster client would not
	// send it, but a plain one might.
	rc := goRedis(t, s, 2)
	ctx := context.Background()
	cmds, _ := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{p}a", "1", 0)
		p.MSet(ctx, "p1", "1", "p2", "2")
		p.Set(ctx, "{p}b", "1", 0)
		return nil
	})
	if len(cmds) != 3 || cmds[0].Err() != nil || cmds[2].Err() != nil ||
		cmds[1].Err() == nil || cmds[1].Err().Error() != msgCrossSlot {
		t.Errorf("pipeline: %v", cmds)
	}
	if n, err := rc.Exists(ctx, "p1").Result(); err != nil || n != 0 {
		t.Errorf("pipelined cross-slot MSET applied")
	}
}

// TestClusterMoved: a follower answers keyed commands MOVED to the
// leader's address (reads too, unless READONLY), serves keyless ones,
// and serves everything itself while no reachable leader is known.
func TestClusterMoved(t *testing.T) {
	s, b := clusterServer(t, false)
	c := dialRaw(t, s)
	moved := func(args ...string) {
		t.Helper()
		key := args[1]
		if args[0] == "EVAL" {
			key = args[3]
		}
		want := "MOVED " + fmt.Sprint(keySlot([]byte(key))) + " 10.0.0.1:6379"
		if v := c.do(args...); v.Type != '-' || v.Str != want {
			t.Errorf("%q = %v, want %q", args, v, want)
		}
	}
	moved("SET", "k", "v")
	moved("GET", "k")
	moved("LOCK.ACQUIRE", "k", "10000", "me")
	moved("EVAL", "return 1", "1", "k")
	// CROSSSLOT comes first, as in Redis.
	if v := c.do("MSET", "x", "1", "y", "2"); v.Str != msgCrossSlot {
		t.Errorf("MSET across slots on a follower = %v", v)
	}
	for _, args := range [][]string{{"PING"}, {"CLUSTER", "INFO"}, {"EVAL", "return 1", "0"}, {"DBSIZE"}} {
		if v := c.do(args...); v.Type == '-' {
			t.Errorf("keyless %q = %v", args, v)
		}
	}
	// READONLY: reads are served here, writes still move.
	c.do("READONLY")
	if v := c.do("GET", "k"); v.Type == '-' {
		t.Errorf("GET after READONLY = %v", v)
	}
	moved("SET", "k", "v")
	c.do("READWRITE")
	moved("GET", "k")
	// A keyed command queued in MULTI moves and aborts the block.
	c.do("MULTI")
	moved("SET", "k", "v")
	if v := c.do("EXEC"); !strings.HasPrefix(v.Str, "EXECABORT") {
		t.Errorf("EXEC after MOVED while queueing = %v", v)
	}
	// The leader unreachable (n3), unknown, or this node: served here.
	for _, leader := range []string{"n3", "", "n2"} {
		b.set(leader, 9)
		if v := c.do("SET", "k", leader); v.Str != "OK" {
			t.Errorf("leader %q: SET = %v, want it served", leader, v)
		}
	}
}

// TestCommandInfo: COMMAND lists every command with Redis' key positions
// (as redis-py's RedisCluster reads them), and COMMAND GETKEYS answers
// from the same key functions.
func TestCommandInfo(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	all := c.do("COMMAND")
	byName := map[string]resp.Value{}
	for _, e := range all.Elems {
		if len(e.Elems) != 10 {
			t.Fatalf("entry %v: %d fields, want 10", e, len(e.Elems))
		}
		byName[e.Elems[0].Str] = e
	}
	if n := c.do("COMMAND", "COUNT").Int; int(n) != len(all.Elems) || n < 50 {
		t.Fatalf("COMMAND COUNT %d, COMMAND lists %d", n, len(all.Elems))
	}
	for _, w := range []struct {
		name                     string
		arity, first, last, step int64
		flag                     string
	}{
		{"set", -3, 1, 1, 1, "write"},
		{"get", 2, 1, 1, 1, "readonly"},
		{"mset", -3, 1, -1, 2, "write"},
		{"del", -2, 1, -1, 1, "write"},
		{"mget", -2, 1, -1, 1, "readonly"},
		{"watch", -2, 1, -1, 1, "allow_busy"},
		{"ping", -1, 0, 0, 0, "fast"},
		{"eval", -3, 0, 0, 0, "movablekeys"},
		{"lock.acquire", -4, 1, 1, 1, "write"},
		{"lock.info", 2, 1, 1, 1, "readonly"},
	} {
		e, ok := byName[w.name]
		if !ok {
			t.Errorf("COMMAND lacks %s", w.name)
			continue
		}
		got := []int64{e.Elems[1].Int, e.Elems[3].Int, e.Elems[4].Int, e.Elems[5].Int}
		if fmt.Sprint(got) != fmt.Sprint([]int64{w.arity, w.first, w.last, w.step}) {
			t.Errorf("%s: arity, first, last, step = %v, want %v", w.name, got, []int64{w.arity, w.first, w.last, w.step})
		}
		var flags []string
		for _, f := range e.Elems[2].Elems {
			flags = append(flags, f.Str)
		}
		if !strings.Contains(strings.Join(flags, " "), w.flag) {
			t.Errorf("%s: flags %v lack %s", w.name, flags, w.flag)
		}
	}
	if v := c.do("COMMAND", "INFO", "get", "nosuch"); len(v.Elems) != 2 || v.Elems[0].Elems[0].Str != "get" || !v.Elems[1].Null {
		t.Errorf("COMMAND INFO get nosuch = %v", v)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, "[a b]"},
		{[]string{"COMMAND", "GETKEYS", "EVAL", "return 1", "2", "x", "y", "z"}, "[x y]"},
		{[]string{"COMMAND", "GETKEYS", "EVAL", "return 1", "3", "x"}, "[]"},
		{[]string{"COMMAND", "GETKEYS", "GET"}, "-ERR wrong number of arguments for 'command|getkeys' command"},
		{[]string{"COMMAND", "GETKEYS", "GET", "a", "b"}, "-" + msgGetKeysArity},
		{[]string{"COMMAND", "GETKEYS", "NOSUCH", "a"}, "-" + msgGetKeysUnknown},
		{[]string{"COMMAND", "GETKEYS", "PING", "x"}, "-" + msgGetKeysNone},
		{[]string{"COMMAND", "GETKEYS"}, "-ERR wrong number of arguments for 'command|getkeys' command"},
	} {
		v := c.do(tc.args...)
		got := "-" + v.Str
		if v.Type != '-' {
			var ks []string
			for _, k := range v.Elems {
				ks = append(ks, k.Str)
			}
			got = fmt.Sprint(ks)
		}
		if got != tc.want {
			t.Errorf("%q = %s, want %s", tc.args, got, tc.want)
		}
	}
}
