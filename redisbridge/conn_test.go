package redisbridge

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"defaults", DefaultConfig(), true},
		{"negative conns", Config{MaxConns: -1}, false},
		{"negative timeout", Config{WriteTimeout: -time.Second}, false},
		{"tiny MaxArgs", Config{MaxArgs: 2}, false},
		{"bad version", Config{Version: "7.x"}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("cluster: forward: %w", api.ErrNoLeader), msgNoLeader},
		{fmt.Errorf("%w: %w", api.ErrNotOwner, fmt.Errorf("%w: %q", fsm.ErrNotOwner, "res")), `NOTOWNER not the owner of this lock ("res")`},
		{api.ErrLocked, msgLocked},
		{fmt.Errorf("%w: %w", api.ErrLocked, fsm.ErrLocked), msgLocked},
		{context.DeadlineExceeded, msgTimeout},
		{fmt.Errorf("boom"), "ERR boom"},
		// Redis' exact text, which clients match: no detail appended.
		{fmt.Errorf("%w: %w", api.ErrOutOfMemory, fmt.Errorf("%w: 5 bytes used, limit 4", fsm.ErrOutOfMemory)),
			"OOM command not allowed when used memory > 'maxmemory'."},
	}
	for _, tt := range tests {
		if got := errorText(tt.err); got != tt.want {
			t.Errorf("errorText(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestAuth: with a password, only AUTH/HELLO/QUIT/RESET work before
// authenticating; both AUTH forms and HELLO AUTH authenticate; go-redis
// with a password connects.
func TestAuth(t *testing.T) {
	s, _ := testServer(t, Config{Password: "s3cret"})
	c := dialRaw(t, s)
	wantErrPrefix(t, c.do("GET", "k"), "NOAUTH Authentication required.")
	wantErrPrefix(t, c.do("HELLO", "3"), "NOAUTH HELLO must be called")
	wantErrPrefix(t, c.do("AUTH", "wrong"), "WRONGPASS invalid username-password pair or user is disabled.")
	wantErrPrefix(t, c.do("AUTH", "bob", "s3cret"), "WRONGPASS ")
	wantErrPrefix(t, c.do("NOPE"), "ERR unknown command 'NOPE'")
	wantErrPrefix(t, c.do("GET"), "ERR wrong number of arguments for 'get' command")
	if v := c.do("AUTH", "s3cret"); v.Str != "OK" {
		t.Fatalf("AUTH: %v", v)
	}
	if v := c.do("GET", "k"); !v.Null {
		t.Fatalf("GET after AUTH: %v", v)
	}
	c2 := dialRaw(t, s)
	if v := c2.do("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "n1"); v.Type != '%' {
		t.Fatalf("HELLO AUTH: %v", v)
	}
	if v := c2.do("CLIENT", "GETNAME"); v.Str != "n1" {
		t.Fatalf("name: %v", v)
	}
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		gr := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "s3cret", Protocol: proto})
		if err := gr.Set(ctx, "a", "b", 0).Err(); err != nil {
			t.Fatalf("go-redis RESP%d with password: %v", proto, err)
		}
		gr.Close()
		bad := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "nope", Protocol: proto, MaxRetries: -1})
		if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("go-redis RESP%d with a wrong password: %v", proto, err)
		}
		bad.Close()
	}
}

func TestMaxConns(t *testing.T) {
	s, _ := testServer(t, Config{MaxConns: 1})
	first := dialRaw(t, s)
	first.do("PING")
	second := dialRaw(t, s)
	if out := second.readRaw(2 * time.Second); out != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second connection got %q", out)
	}
	if v := first.do("PING"); v.Str != "PONG" {
		t.Fatalf("first connection: %v", v)
	}
}

func TestIdleTimeout(t *testing.T) {
	s, _ := testServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dialRaw(t, s)
	if v := c.do("CONFIG", "GET", "timeout"); len(v.Elems) != 2 || v.Elems[1].Str != "1" {
		t.Fatalf("CONFIG GET timeout = %v, want 1 (seconds, rounded up)", v)
	}
	start := time.Now()
	if out := c.readRaw(5 * time.Second); out != "" {
		t.Fatalf("idle connection got %q", out)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("idle connection closed after %v", d)
	}
	// A subscriber is not timed out.
	sub := dialRaw(t, s)
	sub.do("SUBSCRIBE", "c")
	time.Sleep(300 * time.Millisecond) // longer than IdleTimeout: the subscriber must survive it
	if v := sub.do("PING"); v.Type != '*' || v.Elems[0].Str != "pong" {
		t.Fatalf("subscriber after idle period: %v", v)
	}
}

// TestInfoAndConfig: what StackExchange.Redis, ioredis and Redisson parse.
func TestInfoAndConfig(t *testing.T) {
	s, _ := testServer(t, Config{NodeID: "n1"})
	c := dialRaw(t, s)
	info := c.do("INFO").Str
	_, port, _ := net.SplitHostPort(s.Addr())
	for _, want := range []string{"# Server\r\n", "redis_version:7.2.4\r\n", "redis_mode:standalone\r\n", "run_id:",
		"tcp_port:" + port + "\r\n", "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n", "aof_enabled:0\r\n",
		"loading:0\r\n", "# Clients\r\n", "# Locknode\r\nnode_id:n1\r\n", "applied_index:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if repl := c.do("INFO", "replication").Str; strings.Contains(repl, "# Server") || !strings.Contains(repl, "role:master") {
		t.Errorf("INFO replication = %q", repl)
	}
	v := c.do("CONFIG", "GET", "databases")
	if len(v.Elems) != 2 || v.Elems[1].Str != "1" {
		t.Errorf("CONFIG GET databases = %v", v)
	}
	v = c.do("CONFIG", "GET", "*read-only")
	if len(v.Elems) != 4 {
		t.Errorf("CONFIG GET *read-only = %v", v)
	}
	if v := c.do("COMMAND", "COUNT"); v.Int <= 0 {
		t.Errorf("COMMAND COUNT = %v", v)
	}
	if v := c.do("WAIT", "1", "100"); v.Int != 0 {
		t.Errorf("WAIT on one node = %v", v)
	}
}

// TestWaitCountsPeers: WAIT replies the other members once the
// connection's last write is committed.
func TestWaitCountsPeers(t *testing.T) {
	s, _ := testServer(t, Config{Peers: func() []string { return []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"} }})
	c := dialRaw(t, s)
	c.do("SET", "k", "v")
	wantInt(t, c.do("WAIT", "2", "1000"), 2)
	v := c.do("WAITAOF", "1", "2", "1000")
	if len(v.Elems) != 2 || v.Elems[0].Int != 1 || v.Elems[1].Int != 2 {
		t.Fatalf("WAITAOF = %v", v)
	}
}

// TestSentinelFailoverClient: go-redis' FailoverClient finds the master
// through SENTINEL and works against it.
func TestSentinelFailoverClient(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "anything", SentinelAddrs: []string{s.Addr()},
			Protocol: proto, MaxRetries: -1, DialTimeout: 2 * time.Second})
		if err := fc.Set(ctx, "via-sentinel", "1", time.Minute).Err(); err != nil {
			t.Fatalf("RESP%d failover client SET: %v", proto, err)
		}
		if v, err := fc.Get(ctx, "via-sentinel").Result(); err != nil || v != "1" {
			t.Fatalf("RESP%d failover client GET: %q %v", proto, v, err)
		}
		fc.Close()
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, "whatever").Result()
	if err != nil || net.JoinHostPort(addr[0], addr[1]) != s.Addr() {
		t.Fatalf("get-master-addr-by-name = %v %v", addr, err)
	}
	masters, err := sc.Masters(ctx).Result()
	if err != nil || len(masters) != 1 {
		t.Fatalf("masters = %v %v", masters, err)
	}
	if reps, err := sc.Replicas(ctx, "locknode").Result(); err != nil || len(reps) != 0 {
		t.Fatalf("replicas = %v %v", reps, err)
	}
}

// TestPipelining: many commands in one write are answered in order.
func TestPipelining(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString(cmdBytes("INCR", "n"))
	}
	c.send(b.String())
	for i := 1; i <= 200; i++ {
		wantInt(t, c.read(), int64(i))
	}
}

// TestArityOfFSMCommands: the arities the bridge checks (the catalogue's)
// for the FSM's commands are Redis' own.
func TestArityOfFSMCommands(t *testing.T) {
	for name, want := range map[string]int{"get": 2, "set": -3, "del": -2, "hset": -4, "getrange": 4, "time": 1,
		"zadd": -4, "pexpire": -3, "incr": 2} {
		if s := rediscmd.Lookup(name); s == nil || s.Flags&rediscmd.KeySpace == 0 {
			t.Errorf("%s: not an FSM command", name)
			continue
		}
		if got := rediscmd.Lookup(name).Arity; got != want {
			t.Errorf("arity of %s = %d, want %d", name, got, want)
		}
	}
}

// TestArityAllFSMCommands: for every FSM command and argument count, the
// bridge's arity check refuses exactly what the FSM refuses with its
// wrong-arity error, or less (never a command the FSM accepts); and every
// FSM command has an arity, accepting its minimal count.
func TestArityAllFSMCommands(t *testing.T) {
	for _, name := range rediscmd.KeySpaceNames() {
		ar := rediscmd.Lookup(name).Arity
		if ar == 0 {
			t.Errorf("%s: no arity", name)
			continue
		}
		for n := 1; n <= 12; n++ {
			args := make([][]byte, n)
			args[0] = []byte(name)
			for i := 1; i < n; i++ {
				args[i] = []byte("1")
			}
			tbl := fsm.New(fsm.Config{})
			r := tbl.Apply(1, &fsm.Command{Op: fsm.OpRedis, Args: args})
			fsmRefuses := r.Reply.IsError() && strings.HasPrefix(r.Reply.Str, "ERR wrong number of arguments")
			if !rediscmd.Lookup(name).ArityOK(len(args)) && !fsmRefuses {
				t.Errorf("%s with %d args: the bridge refuses what the FSM accepts (%v)", name, n, r.Reply)
			}
			if least := max(ar, -ar); n == least && fsmRefuses {
				t.Errorf("%s with %d args: the FSM refuses its own arity %d", name, n, ar)
			}
		}
	}
}

// TestLowerName: command names in any case come back lower-cased, and a
// bridge command's or an FSM data command's name without allocating
// (every command of a pipeline asks for it several times).
func TestLowerName(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := &conn{s: s}
	for _, tc := range []struct {
		in, want string
		noAlloc  bool
	}{
		{"SET", "set", true},
		{"get", "get", true},
		{"EvalSha", "evalsha", true},
		{"PING", "ping", true},
		{"NoSuchCommand", "nosuchcommand", false},
		{strings.Repeat("X", 40), strings.Repeat("x", 40), false},
	} {
		if got := c.lowerName([]byte(tc.in)); got != tc.want {
			t.Errorf("lowerName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !tc.noAlloc {
			continue
		}
		in := []byte(tc.in)
		if n := testing.AllocsPerRun(100, func() { c.lowerName(in) }); n != 0 {
			t.Errorf("lowerName(%q) allocates %v times", tc.in, n)
		}
	}
}
