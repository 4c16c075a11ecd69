package redisbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
)

// testUsers: one user per category, all in the namespace app:*, and one
// with every category but the same namespace.
const testUsers = `
user r on >rp ~app:* +@read
user w on >wp ~app:* +@write
user a on >ap ~app:* +@admin
user all on >allp ~app:* +@all
user root on >rootp ~* &* +@all
user off off >offp ~* +@all
`

func usersServer(t *testing.T, file string) (*Server, *auth.Store) {
	t.Helper()
	us, err := auth.Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	store := auth.NewStoreFrom(us, nil)
	s, _ := testServer(t, Config{Users: store, Audit: auth.NewAudit(nil)})
	return s, store
}

// bridgeSamples: a valid invocation of every command of the bridge's own
// table, with the category it needs and the name NOPERM reports. Keys and
// channels are in the namespace app:*. A command missing here fails
// TestPermissionsTable, so a new command cannot go unchecked.
var bridgeSamples = map[string]struct {
	args []string
	cat  auth.Category // 0: any authenticated user
	name string        // NOPERM's name, when not the command's
}{
	"ping":         {args: []string{"PING"}},
	"echo":         {args: []string{"ECHO", "x"}},
	"hello":        {args: []string{"HELLO", "2"}},
	"auth":         {args: []string{"AUTH", "root", "rootp"}},
	"select":       {args: []string{"SELECT", "0"}},
	"client":       {args: []string{"CLIENT", "ID"}},
	"info":         {args: []string{"INFO", "server"}, cat: auth.Read},
	"config":       {args: []string{"CONFIG", "GET", "timeout"}, cat: auth.Read},
	"cluster":      {args: []string{"CLUSTER", "INFO"}, cat: auth.Read},
	"command":      {args: []string{"COMMAND", "COUNT"}},
	"quit":         {args: []string{"QUIT"}},
	"reset":        {args: []string{"RESET"}},
	"readonly":     {args: []string{"READONLY"}},
	"readwrite":    {args: []string{"READWRITE"}},
	"asking":       {args: []string{"ASKING"}},
	"wait":         {args: []string{"WAIT", "0", "1"}},
	"waitaof":      {args: []string{"WAITAOF", "0", "0", "1"}},
	"sentinel":     {args: []string{"SENTINEL", "MASTERS"}, cat: auth.Read},
	"role":         {args: []string{"ROLE"}, cat: auth.Read},
	"acl":          {args: []string{"ACL", "WHOAMI"}},
	"slowlog":      {args: []string{"SLOWLOG", "GET"}, cat: auth.Admin, name: "slowlog|get"},
	"scan":         {args: []string{"SCAN", "0"}, cat: auth.Read},
	"keys":         {args: []string{"KEYS", "*"}, cat: auth.Read},
	"dbsize":       {args: []string{"DBSIZE"}, cat: auth.Read},
	"eval":         {args: []string{"EVAL", "return 1", "1", "app:k"}, cat: auth.Write},
	"evalsha":      {args: []string{"EVALSHA", strings.Repeat("0", 40), "1", "app:k"}, cat: auth.Write},
	"eval_ro":      {args: []string{"EVAL_RO", "return 1", "1", "app:k"}, cat: auth.Read},
	"evalsha_ro":   {args: []string{"EVALSHA_RO", strings.Repeat("0", 40), "1", "app:k"}, cat: auth.Read},
	"script":       {args: []string{"SCRIPT", "FLUSH"}, cat: auth.Admin, name: "script|flush"},
	"subscribe":    {args: []string{"SUBSCRIBE", "app:c"}, cat: auth.Read},
	"unsubscribe":  {args: []string{"UNSUBSCRIBE", "app:c"}},
	"psubscribe":   {args: []string{"PSUBSCRIBE", "app:*"}, cat: auth.Read},
	"punsubscribe": {args: []string{"PUNSUBSCRIBE", "app:*"}},
	"publish":      {args: []string{"PUBLISH", "app:c", "m"}, cat: auth.Write},
	"watch":        {args: []string{"WATCH", "app:k"}, cat: auth.Read},
	"unwatch":      {args: []string{"UNWATCH"}},
	"multi":        {args: []string{"MULTI"}},
	"exec":         {args: []string{"EXEC"}},
	"discard":      {args: []string{"DISCARD"}},
	"lock.acquire": {args: []string{"LOCK.ACQUIRE", "app:k", "o", "1000"}, cat: auth.Write},
	"lock.release": {args: []string{"LOCK.RELEASE", "app:k", "o"}, cat: auth.Write},
	"lock.extend":  {args: []string{"LOCK.EXTEND", "app:k", "o", "1000"}, cat: auth.Write},
	"lock.info":    {args: []string{"LOCK.INFO", "app:k"}, cat: auth.Read},
	"fence.check":  {args: []string{"FENCE.CHECK", "app:k", "1"}, cat: auth.Write},
	// Only in a build with -tags locknode_next (cmd_next.go).
	"next.note": {args: []string{"NEXT.NOTE", "app:k", "v"}, cat: auth.Write},
}

// moreSamples: subcommands and options whose category differs from
// their command's.
var moreSamples = []struct {
	args []string
	cat  auth.Category
	name string
}{
	{[]string{"LOCK.RELEASE", "app:k", "o", "FORCE"}, auth.Admin, "lock.release"},
	{[]string{"LOCK.RELEASE", "app:k", "o", "ID", "force"}, auth.Write, "lock.release"},
	{[]string{"LOCK.RELEASE", "app:k", "o", "ID", "x", "force"}, auth.Admin, "lock.release"},
	{[]string{"SCRIPT", "LOAD", "return 1"}, auth.Write, "script|load"},
	{[]string{"SCRIPT", "EXISTS", "abc"}, auth.Read, "script|exists"},
	{[]string{"SCRIPT", "KILL"}, auth.Admin, "script|kill"},
	{[]string{"CLIENT", "LIST"}, auth.Admin, "client|list"},
	{[]string{"CLIENT", "KILL", "ID", "999999"}, auth.Admin, "client|kill"},
	{[]string{"CLIENT", "NO-EVICT", "on"}, auth.Admin, "client|no-evict"},
	{[]string{"CLIENT", "HELP"}, 0, "client"},
	{[]string{"ACL", "LIST"}, auth.Admin, "acl|list"},
	{[]string{"ACL", "LOAD"}, auth.Admin, "acl|load"},
	{[]string{"CONFIG", "SET", "slowlog-max-len", "128"}, auth.Admin, "config|set"},
	{[]string{"SLOWLOG", "RESET"}, auth.Admin, "slowlog|reset"},
	{[]string{"SLOWLOG", "HELP"}, 0, "slowlog"},
}

type permCase struct {
	args []string
	cat  auth.Category
	name string
}

// permCases returns one case per command of the bridge's table and of
// the FSM's, plus moreSamples.
func permCases(t *testing.T, s *Server) []permCase {
	var cases []permCase
	for name, cmd := range s.commands {
		if cmd.flags&flagData != 0 {
			continue // below
		}
		sm, ok := bridgeSamples[name]
		if !ok {
			t.Errorf("command %q has no sample in bridgeSamples: say which category it needs", name)
			continue
		}
		n := sm.name
		if n == "" {
			n = name
		}
		cases = append(cases, permCase{sm.args, sm.cat, n})
	}
	for _, m := range moreSamples {
		cases = append(cases, permCase{m.args, m.cat, m.name})
	}
	for _, name := range rediscmd.KeySpaceNames() {
		if s.commands[name].flags&flagData == 0 {
			continue // served by the bridge's own entry
		}
		// Arguments the FSM's arity accepts; every one a key of the
		// namespace, so any key position is covered.
		args := []string{strings.ToUpper(name)}
		for n := 2; n <= 10 && !rediscmd.Lookup(name).ArityOK(len(args)); n++ {
			args = append(args, "app:"+strconv.Itoa(n))
		}
		// Read, when the FSM runs it in a Read; else write.
		cat := auth.Write
		if _, ro := fsm.New(fsm.Config{}).Read(0, toBytes(args)); ro {
			cat = auth.Read
		}
		cases = append(cases, permCase{args, cat, name})
	}
	return cases
}

func toBytes(args []string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

// TestPermissionsTable: every command of the bridge and of the FSM, run
// by a user of each category: allowed (any reply but NOPERM) exactly when
// the user has the category the command needs, else Redis' NOPERM text
// naming the command; then, by a user with every category, with its keys
// or channels moved out of the namespace: NOPERM for keys or channels.
func TestPermissionsTable(t *testing.T) {
	s, _ := usersServer(t, testUsers)
	users := []struct {
		name, pass string
		cats       auth.Category
	}{
		{"r", "rp", auth.Read}, {"w", "wp", auth.Write}, {"a", "ap", auth.Admin}, {"all", "allp", auth.All},
	}
	for _, pc := range permCases(t, s) {
		t.Run(strings.Join(pc.args, "_"), func(t *testing.T) {
			for _, u := range users {
				c := dialRaw(t, s)
				if v := c.do("AUTH", u.name, u.pass); v.Str != "OK" {
					t.Fatalf("AUTH %s: %v", u.name, v)
				}
				v := c.do(pc.args...)
				refused := v.Type == '-' && strings.HasPrefix(v.Str, "NOPERM")
				want := pc.cat != 0 && u.cats&pc.cat == 0
				if refused != want {
					t.Errorf("user %s (%v): %v; refused %v, want %v", u.name, u.cats, v, refused, want)
				}
				if want && v.Str != msgNoPermCmd(pc.name) {
					t.Errorf("user %s: %q, want %q", u.name, v.Str, msgNoPermCmd(pc.name))
				}
			}
			// Out of the namespace.
			out := make([]string, len(pc.args))
			moved := false
			for i, a := range pc.args {
				out[i] = a
				if strings.HasPrefix(a, "app:") {
					out[i] = "other" + a[3:]
					moved = true
				}
			}
			if !moved || pc.cat == 0 {
				return
			}
			c := dialRaw(t, s)
			c.do("AUTH", "all", "allp")
			v := c.do(out...)
			if v.Str != msgNoPermKeys && v.Str != msgNoPermChans {
				t.Errorf("out of the namespace %q: %v", out, v)
			}
		})
	}
}

// TestDataKeysCoverFSM: the key positions (the catalogue's) name, for every FSM
// command, exactly the arguments the FSM treats as keys: with every
// argument a namespaced key, a command whose keys were all outside
// would pass; here each key position is moved out in turn and must be
// refused. Commands without keys (TIME, PING) are listed.
func TestDataKeysCoverFSM(t *testing.T) {
	cmds := commandTable()
	for _, name := range rediscmd.KeySpaceNames() {
		args := toBytes([]string{name, "k1", "v1", "k2", "v2"})
		keys := accessOf(cmds[name], name, args).keys
		switch name {
		case "time", "ping", "publish":
			if len(keys) != 0 {
				t.Errorf("%s: keys %q", name, keys)
			}
			continue
		case "del", "unlink", "exists", "mget":
			if len(keys) != 4 {
				t.Errorf("%s: keys %q", name, keys)
			}
			continue
		case "mset", "msetnx":
			if len(keys) != 2 || string(keys[1]) != "k2" {
				t.Errorf("%s: keys %q", name, keys)
			}
			continue
		}
		if len(keys) != 1 || string(keys[0]) != "k1" {
			t.Errorf("%s: keys %q", name, keys)
		}
	}
}

// TestAuthUsers: AUTH and HELLO with users, ACL WHOAMI, disabled users,
// RESET, a reload that removes a user, and Redis' texts.
func TestAuthUsers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(path, []byte(testUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := auth.NewStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, Config{Users: store})
	c := dialRaw(t, s)
	exact := func(args []string, want string) {
		t.Helper()
		v := c.do(args...)
		if got := v.Str; got != want {
			t.Fatalf("%q: %q (%c), want %q", args, got, v.Type, want)
		}
	}
	exact([]string{"GET", "app:k"}, "NOAUTH Authentication required.")
	exact([]string{"ACL", "WHOAMI"}, "NOAUTH Authentication required.")
	exact([]string{"AUTH", "rp"}, msgWrongPass) // no default user
	exact([]string{"AUTH", "r", "wrong"}, msgWrongPass)
	exact([]string{"AUTH", "off", "offp"}, msgWrongPass)
	exact([]string{"AUTH", "nobody", "x"}, msgWrongPass)
	exact([]string{"HELLO", "3", "AUTH", "r", "wrong"}, msgWrongPass)
	if v := c.do("HELLO", "3", "AUTH", "r", "rp"); v.Type != '%' {
		t.Fatalf("HELLO AUTH: %v", v)
	}
	exact([]string{"ACL", "WHOAMI"}, "r")
	exact([]string{"SET", "app:k", "v"}, "NOPERM this user has no permissions to run the 'set' command")
	exact([]string{"GET", "other"}, msgNoPermKeys)
	exact([]string{"MGET", "app:1", "other"}, msgNoPermKeys)
	exact([]string{"SUBSCRIBE", "other"}, msgNoPermChans)
	exact([]string{"AUTH", "w", "wp"}, "OK")
	exact([]string{"ACL", "WHOAMI"}, "w")
	exact([]string{"EVAL", "return 1", "1", "other"}, msgNoPermKeys)
	// A script may touch only the keys it declares (they were checked).
	if v := c.do("EVAL", "return redis.call('get', 'other')", "0"); !strings.HasPrefix(v.Str, "ERR The user executing the script can't access at least one of the keys") {
		t.Fatalf("undeclared key: %v", v)
	}
	if v := c.do("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "app:s"); v.Str != "OK" {
		t.Fatalf("declared key: %v", v)
	}
	// A MULTI with a refused command fails as a whole.
	exact([]string{"MULTI"}, "OK")
	exact([]string{"SET", "app:k", "v"}, "QUEUED")
	exact([]string{"SET", "other", "v"}, msgNoPermKeys)
	exact([]string{"EXEC"}, msgExecAbort)
	exact([]string{"RESET"}, "RESET")
	exact([]string{"GET", "app:k"}, "NOAUTH Authentication required.")
	exact([]string{"AUTH", "w", "wp"}, "OK")

	// A reload that disables w: its next command needs AUTH again.
	if err := os.WriteFile(path, []byte(strings.Replace(testUsers, "user w on", "user w off", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.Reload(); err != nil {
		t.Fatal(err)
	}
	exact([]string{"SET", "app:k", "v"}, "NOAUTH Authentication required.")
	exact([]string{"AUTH", "w", "wp"}, msgWrongPass)

	// "default on nopass": clients start authenticated as default.
	us, _ := auth.Parse(strings.NewReader("user default on nopass ~pub:* +@read"))
	s2, _ := testServer(t, Config{Users: auth.NewStoreFrom(us, nil)})
	c2 := dialRaw(t, s2)
	if v := c2.do("ACL", "WHOAMI"); v.Str != "default" {
		t.Fatalf("anonymous: %v", v)
	}
	if v := c2.do("GET", "pub:x"); !v.Null {
		t.Fatalf("anonymous GET: %v", v)
	}
}

// TestPipelinedWriteChecked: a pipelined write (group-committed without
// waiting) is checked like any other.
func TestPipelinedWriteChecked(t *testing.T) {
	s, _ := usersServer(t, testUsers)
	c := dialRaw(t, s)
	c.do("AUTH", "w", "wp")
	c.send(cmdBytes("SET", "app:1", "a") + cmdBytes("SET", "other", "b") + cmdBytes("SET", "app:2", "c"))
	for i, want := range []string{"OK", msgNoPermKeys, "OK"} {
		if v := c.read(); v.Str != want {
			t.Fatalf("reply %d: %v, want %q", i, v, want)
		}
	}
	root := dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	if v := root.do("EXISTS", "other"); v.Int != 0 {
		t.Fatalf("a refused pipelined SET wrote: %v", v)
	}
}

// TestUsersGoRedis: go-redis with Username/Password, RESP2 and RESP3.
func TestUsersGoRedis(t *testing.T) {
	s, _ := usersServer(t, testUsers)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		gr := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "w", Password: "wp", Protocol: proto})
		if err := gr.SetNX(ctx, "app:lock", "tok", time.Minute).Err(); err != nil {
			t.Fatalf("RESP%d SET NX: %v", proto, err)
		}
		if err := gr.Get(ctx, "app:lock").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("RESP%d GET as a write-only user: %v", proto, err)
		}
		gr.Del(ctx, "app:lock")
		gr.Close()
		bad := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "w", Password: "nope", Protocol: proto, MaxRetries: -1})
		if err := bad.Ping(ctx).Err(); err == nil || err.Error() != msgWrongPass {
			t.Fatalf("RESP%d wrong password: %v", proto, err)
		}
		bad.Close()
	}
}

// startACLRedis runs redis-server with an ACL file on a free port.
func startACLRedis(t *testing.T, aclFile string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("redis-server not found (LOCKNODE_CI=1): %v", err)
		}
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--aclfile", aclFile, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	// Ends when redis-server exits (cleanup kills it).
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	eventually(t, 10*time.Second, "redis-server to listen", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err == nil
	})
	return addr
}

// TestAuthTextsMatchRedis: the same users file given to redis-server 7
// (--aclfile) and to the bridge; the refusals are byte-identical.
func TestAuthTextsMatchRedis(t *testing.T) {
	file := "user default off\nuser app on >apppw ~app:* &app:* +@all\nuser ro on >ro ~app:* &app:* +@read\n"
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	raddr := startACLRedis(t, path)
	s, _ := usersServer(t, file)
	steps := [][]string{
		{"GET", "app:x"},
		{"AUTH", "wrong"},
		{"AUTH", "app", "wrong"},
		{"AUTH", "nouser", "x"},
		{"HELLO", "3", "AUTH", "app", "wrong"},
		{"AUTH", "ro", "ro"},
		{"SET", "app:x", "1"},
		{"SCRIPT", "FLUSH"},
		// (ACL WHOAMI differs on purpose here: Redis refuses it to a
		// +@read user; every authenticated user may ask who it is here.)
		{"AUTH", "app", "apppw"},
		{"GET", "other"},
		{"MGET", "app:1", "other"},
		{"EVAL", "return 1", "1", "other"},
		{"PUBLISH", "other", "x"},
		{"ACL", "WHOAMI"},
		{"ACL", "NOPE"},
		{"SUBSCRIBE", "other"},
		{"PSUBSCRIBE", "app:x*"},
	}
	dial := func(addr string) *rawConn {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	}
	rc, bc := dial(raddr), dial(s.Addr())
	for _, st := range steps {
		want, got := rc.do(st...), bc.do(st...)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%q: redis %v, bridge %v", st, want, got)
		}
	}
}

// TestLockLibrariesAsWriteUser: redsync and bsm/redislock work for a user
// with +@read +@write (no admin) in its namespace: their compare-and-
// delete and extend scripts prove ownership by token. A plain DEL, SET or
// PEXPIRE of a live lock by that user is refused (the FSM decides, with
// fsm.Command.NoForce); an admin's DEL forces the release.
func TestLockLibrariesAsWriteUser(t *testing.T) {
	var logs syncBuf
	us, err := auth.Parse(strings.NewReader(testUsers + "user rw on >rwp ~app:* +@read +@write\n"))
	if err != nil {
		t.Fatal(err)
	}
	audit := auth.NewAudit(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn}))
	s, _ := testServer(t, Config{Users: auth.NewStoreFrom(us, nil), Audit: audit})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		var pools []rsredis.Pool
		for i := 0; i < 3; i++ {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "rw", Password: "rwp", Protocol: proto})
			t.Cleanup(func() { c.Close() })
			pools = append(pools, rsgoredis.NewPool(c))
		}
		rs := redsync.New(pools...)
		m := rs.NewMutex("app:redsync", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("RESP%d redsync lock: %v", proto, err)
		}
		if ok, err := m.ExtendContext(ctx); !ok || err != nil {
			t.Fatalf("RESP%d redsync extend: %v %v", proto, ok, err)
		}
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("RESP%d redsync unlock: %v %v", proto, ok, err)
		}
		if err := rs.NewMutex("other:redsync", redsync.WithTries(1)).LockContext(ctx); err == nil {
			t.Fatalf("RESP%d redsync outside the namespace locked", proto)
		}
	}

	rw := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "rw", Password: "rwp"})
	t.Cleanup(func() { rw.Close() })
	locker := redislock.New(rw)
	l, err := locker.Obtain(ctx, "app:bsm", 2*time.Second, nil)
	if err != nil {
		t.Fatalf("redislock obtain: %v", err)
	}
	if err := l.Refresh(ctx, 5*time.Second, nil); err != nil {
		t.Fatalf("redislock refresh: %v", err)
	}
	if ttl, err := l.TTL(ctx); err != nil || ttl <= 2*time.Second {
		t.Fatalf("redislock ttl %v %v", ttl, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("redislock release: %v", err)
	}

	// Forcing needs admin.
	if ok, err := rw.SetNX(ctx, "app:held", "tok", time.Minute).Result(); !ok || err != nil {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	for _, cmd := range [][]any{{"DEL", "app:held"}, {"SET", "app:held", "mine"}, {"PEXPIRE", "app:held", "1"}} {
		if err := rw.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("%v by a write user: %v", cmd, err)
		}
	}
	if v, err := rw.Get(ctx, "app:held").Result(); v != "tok" {
		t.Fatalf("after refused forcing: %q %v", v, err)
	}
	all := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "all", Password: "allp"})
	t.Cleanup(func() { all.Close() })
	if n, err := all.Del(ctx, "app:held").Result(); n != 1 || err != nil {
		t.Fatalf("admin DEL: %v %v", n, err)
	}
	if l := logs.String(); strings.Count(l, "event=force_release") != 1 || !strings.Contains(l, "user=all") ||
		!strings.Contains(l, "key=app:held") || !strings.Contains(l, "owner=tok") {
		t.Fatalf("audit log: %q", l)
	}
}

// syncBuf is a bytes.Buffer safe for a logger and a test to share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRedisPyUsers: redis-py with username and password (Lock, ACL
// WHOAMI, NoPermissionError, AuthenticationError).
func TestRedisPyUsers(t *testing.T) {
	py := pythonWithRedis(t)
	s, _ := usersServer(t, testUsers+"user rw on >rwp ~app:* +@read +@write\n")
	host, port, _ := net.SplitHostPort(s.Addr())
	out, err := exec.Command(py, "testdata/redispy_users.py", host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

// TestReloadNarrowsSubscriptions: a subscriber whose user loses the
// channel in a reload is disconnected at the next message, as Redis
// does; one that keeps it still receives.
func TestReloadNarrowsSubscriptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	file := "user pub on >p ~* &* +@all\nuser sub on >s ~app:* +@read\nuser keep on >k ~app:* +@read\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := auth.NewStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, Config{Users: store})
	sub, keep, pub := dialRaw(t, s), dialRaw(t, s), dialRaw(t, s)
	sub.do("AUTH", "sub", "s")
	keep.do("AUTH", "keep", "k")
	pub.do("AUTH", "pub", "p")
	sub.do("SUBSCRIBE", "app:c")
	keep.do("SUBSCRIBE", "app:c")
	if err := os.WriteFile(path, []byte(strings.Replace(file, "user sub on >s ~app:*", "user sub on >s ~other:*", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.Reload(); err != nil {
		t.Fatal(err)
	}
	pub.do("PUBLISH", "app:c", "m")
	if v := keep.read(); v.Type != '>' && v.Type != '*' || v.Elems[2].Str != "m" {
		t.Fatalf("kept subscriber: %v", v)
	}
	sub.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := sub.br.ReadByte()
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("narrowed subscriber: byte %q, err %v; want the connection closed", b, err)
	}
}
