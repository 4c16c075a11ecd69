package redisbridge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/redisbridge/resp"
)

func strs(v resp.Value) []string {
	out := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		out[i] = e.Str
	}
	return out
}

// seedKeys writes a small key space of every kind, a lock included.
func seedKeys(t *testing.T, c *rawConn) {
	t.Helper()
	for _, args := range [][]string{
		{"SET", "app:s", "v"},
		{"SET", "app:ttl", "v", "PX", "60000"},
		{"SET", "app:lock", "tok", "NX", "PX", "60000"}, // a lock
		{"HSET", "app:h", "f", "v"},
		{"SET", "other:s", "v"},
		{"SET", "a*b", "v"},
		{"SET", "a?b", "v"},
		{"SET", "axb", "v"},
	} {
		if v := c.do(args...); v.Type == '-' {
			t.Fatalf("%v: %v", args, v)
		}
	}
}

// scanAllRaw runs a whole SCAN iteration with the given options.
func scanAllRaw(t *testing.T, c *rawConn, opts ...string) []string {
	t.Helper()
	var out []string
	cursor := "0"
	for range 10000 {
		v := c.do(append([]string{"SCAN", cursor}, opts...)...)
		if v.Type != '*' || len(v.Elems) != 2 {
			t.Fatalf("SCAN %s %v: %v", cursor, opts, v)
		}
		out = append(out, strs(v.Elems[1])...)
		cursor = v.Elems[0].Str
		if cursor == "0" {
			slices.Sort(out)
			return out
		}
	}
	t.Fatal("SCAN did not end")
	return nil
}

func TestKeyspaceCommands(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	seedKeys(t, c)
	all := []string{"a*b", "a?b", "app:h", "app:lock", "app:s", "app:ttl", "axb", "other:s"}
	for _, tc := range []struct {
		name string
		args []string
		want string // resp.Value's String, or a list of keys
		keys []string
	}{
		{"keys-all", []string{"KEYS", "*"}, "", all},
		{"keys-prefix", []string{"KEYS", "app:*"}, "", []string{"app:h", "app:lock", "app:s", "app:ttl"}},
		{"keys-escaped-star", []string{"KEYS", `a\*b`}, "", []string{"a*b"}},
		{"keys-escaped-question", []string{"KEYS", `a\?b`}, "", []string{"a?b"}},
		{"keys-question", []string{"KEYS", "a?b"}, "", []string{"a*b", "a?b", "axb"}},
		{"keys-class", []string{"KEYS", "a[x?]b"}, "", []string{"a?b", "axb"}},
		{"keys-none", []string{"KEYS", "zzz*"}, "", []string{}},
		{"dbsize", []string{"DBSIZE"}, "8", nil},
		{"keys-arity", []string{"KEYS"}, "(error ERR wrong number of arguments for 'keys' command)", nil},
		{"dbsize-arity", []string{"DBSIZE", "x"}, "(error ERR wrong number of arguments for 'dbsize' command)", nil},
		{"scan-bad-cursor", []string{"SCAN", "x"}, "(error ERR invalid cursor)", nil},
		{"scan-sign-alone", []string{"SCAN", "-"}, "(error ERR invalid cursor)", nil},
		{"scan-space", []string{"SCAN", " 1"}, "(error ERR invalid cursor)", nil},
		{"scan-count-zero", []string{"SCAN", "0", "COUNT", "0"}, "(error ERR syntax error)", nil},
		{"scan-count-nan", []string{"SCAN", "0", "COUNT", "x"}, "(error ERR value is not an integer or out of range)", nil},
		{"scan-unknown-option", []string{"SCAN", "0", "BOGUS", "1"}, "(error ERR syntax error)", nil},
		{"scan-option-without-value", []string{"SCAN", "0", "MATCH"}, "(error ERR syntax error)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := c.do(tc.args...)
			if tc.keys != nil {
				if got := strs(v); v.Type != '*' || !slices.Equal(got, tc.keys) {
					t.Fatalf("%v = %v, want %v", tc.args, v, tc.keys)
				}
				return
			}
			if v.String() != tc.want {
				t.Fatalf("%v = %s, want %s", tc.args, v.String(), tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		opts []string
		want []string
	}{
		{"scan-all", nil, all},
		{"scan-count-1", []string{"COUNT", "1"}, all},
		{"scan-match", []string{"MATCH", "app:*", "COUNT", "2"}, []string{"app:h", "app:lock", "app:s", "app:ttl"}},
		{"scan-type-hash", []string{"TYPE", "hash"}, []string{"app:h"}},
		{"scan-type-string-includes-locks", []string{"TYPE", "STRING", "MATCH", "app:*"}, []string{"app:lock", "app:s", "app:ttl"}},
		{"scan-type-unknown", []string{"TYPE", "nosuch"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scanAllRaw(t, c, tc.opts...); !slices.Equal(got, tc.want) {
				t.Fatalf("SCAN %v = %v, want %v", tc.opts, got, tc.want)
			}
		})
	}
	t.Run("info-keyspace", func(t *testing.T) {
		v := c.do("INFO", "keyspace")
		want := "# Keyspace\r\ndb0:keys=8,expires=2,avg_ttl=0\r\n\r\n"
		if v.Str != want {
			t.Fatalf("INFO keyspace = %q, want %q", v.Str, want)
		}
		if v := c.do("INFO"); !strings.Contains(v.Str, "db0:keys=8,") {
			t.Fatalf("INFO (default sections) has no keyspace line: %q", v.Str)
		}
	})
	t.Run("empty-keyspace-has-no-db-line", func(t *testing.T) {
		s2, _ := testServer(t, Config{})
		if v := dialRaw(t, s2).do("INFO", "keyspace"); v.Str != "# Keyspace\r\n\r\n" {
			t.Fatalf("INFO keyspace of an empty key space = %q", v.Str)
		}
	})
}

// TestKeyspaceFilteredByKeyPatterns: a user of ~app:* sees app:* keys
// alone in KEYS, SCAN, DBSIZE and INFO keyspace; a user of ~* sees all.
func TestKeyspaceFilteredByKeyPatterns(t *testing.T) {
	s, _ := usersServer(t, testUsers)
	root := dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	seedKeys(t, root)
	r := dialRaw(t, s)
	if v := r.do("AUTH", "r", "rp"); v.Str != "OK" {
		t.Fatal(v)
	}
	app := []string{"app:h", "app:lock", "app:s", "app:ttl"}
	if got := strs(r.do("KEYS", "*")); !slices.Equal(got, app) {
		t.Fatalf("KEYS * as ~app:* = %v, want %v", got, app)
	}
	if got := scanAllRaw(t, r, "COUNT", "1"); !slices.Equal(got, app) {
		t.Fatalf("SCAN as ~app:* = %v, want %v", got, app)
	}
	if v := r.do("DBSIZE"); v.Int != 4 {
		t.Fatalf("DBSIZE as ~app:* = %v, want 4", v)
	}
	if v := r.do("INFO", "keyspace"); !strings.Contains(v.Str, "db0:keys=4,expires=2,") {
		t.Fatalf("INFO keyspace as ~app:* = %q", v.Str)
	}
	if v := root.do("DBSIZE"); v.Int != 8 {
		t.Fatalf("DBSIZE as ~* = %v, want 8", v)
	}
	// A user without @read may not list at all.
	w := dialRaw(t, s)
	w.do("AUTH", "w", "wp")
	for _, args := range [][]string{{"KEYS", "*"}, {"SCAN", "0"}, {"DBSIZE"}} {
		if v := w.do(args...); v.Str != msgNoPermCmd(strings.ToLower(args[0])) {
			t.Fatalf("%v as a writer = %v, want NOPERM", args, v)
		}
	}
}

// TestGoRedisScanIterator: go-redis' iterator walks the whole key space,
// each key once, and ScanType filters.
func TestGoRedisScanIterator(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := goRedis(t, s, proto)
			p := fmt.Sprintf("p%d:", proto)
			var want []string
			for i := range 500 {
				k := fmt.Sprintf("%s%03d", p, i)
				if err := rc.Set(ctx, k, "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
				want = append(want, k)
			}
			rc.HSet(ctx, p+"hash", "f", "v")
			var got []string
			it := rc.Scan(ctx, 0, p+"[0-9]*", 7).Iterator()
			for it.Next(ctx) {
				got = append(got, it.Val())
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("iterator returned %d keys (%d distinct wanted)", len(got), len(want))
			}
			keys, _, err := rc.ScanType(ctx, 0, p+"*", 1000, "hash").Result()
			if err != nil || !slices.Equal(keys, []string{p + "hash"}) {
				t.Fatalf("ScanType hash = %v, %v", keys, err)
			}
			n, err := rc.DBSize(ctx).Result()
			if err != nil || n < 501 {
				t.Fatalf("DBSize = %d, %v", n, err)
			}
		})
	}
}

// TestRedisCLIScan: redis-cli --scan and --pattern list the key space.
func TestRedisCLIScan(t *testing.T) {
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("LOCKNODE_CI=1 but redis-cli not found: %v", err)
		}
		t.Skipf("redis-cli not found: %v", err)
	}
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	var want []string
	for i := range 120 {
		k := fmt.Sprintf("cli:%03d", i)
		c.do("SET", k, "v")
		want = append(want, k)
	}
	c.do("SET", "other", "v")
	host, port := splitHostPort(s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "--scan", "--pattern", "cli:*").Output()
	if err != nil {
		t.Fatalf("redis-cli --scan: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("redis-cli --scan --pattern cli:* listed %d keys, want %d: %v", len(got), len(want), got)
	}
}

func TestACLListAndLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("user root on >rootp ~* +@all\nuser app on >secret ~app:* +@read\n")
	store, err := auth.NewStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, Config{Users: store})
	c := dialRaw(t, s)
	c.do("AUTH", "root", "rootp")
	if v := c.do("ACL", "WHOAMI"); v.Str != "root" {
		t.Fatalf("ACL WHOAMI = %v", v)
	}
	list := strs(c.do("ACL", "LIST"))
	if len(list) != 2 || !strings.HasPrefix(list[1], "user app on #") || !strings.HasSuffix(list[1], " ~app:* -@all +@read") {
		t.Fatalf("ACL LIST = %q", list)
	}
	for _, l := range list {
		if strings.Contains(l, "secret") || strings.Contains(l, "rootp") {
			t.Fatalf("ACL LIST shows a password: %q", l)
		}
	}

	// A new user after ACL LOAD; the old password of app stops working.
	write("user root on >rootp ~* +@all\nuser app on >secret2 ~app:* +@read\nuser new on >np ~* +@read\n")
	if v := c.do("ACL", "LOAD"); v.Str != "OK" {
		t.Fatalf("ACL LOAD = %v", v)
	}
	if v := dialRaw(t, s).do("AUTH", "new", "np"); v.Str != "OK" {
		t.Fatalf("AUTH as a user added by ACL LOAD: %v", v)
	}
	if v := dialRaw(t, s).do("AUTH", "app", "secret"); v.Type != '-' {
		t.Fatalf("AUTH with a password ACL LOAD removed: %v", v)
	}

	// A broken file: an error naming the line, the users in force stay.
	write("user root on >rootp ~* +@all\nuser bad on bogus\n")
	if v := c.do("ACL", "LOAD"); v.Type != '-' || !strings.Contains(v.Str, "line 2") || strings.Contains(v.Str, "rootp") {
		t.Fatalf("ACL LOAD of a broken file = %v", v)
	}
	if v := dialRaw(t, s).do("AUTH", "new", "np"); v.Str != "OK" {
		t.Fatalf("a failed ACL LOAD dropped the users in force: %v", v)
	}

	// Only admins list and load.
	n := dialRaw(t, s)
	n.do("AUTH", "new", "np")
	for _, sub := range []string{"LIST", "LOAD"} {
		if v := n.do("ACL", sub); v.Str != msgNoPermCmd("acl|"+strings.ToLower(sub)) {
			t.Fatalf("ACL %s as a reader = %v", sub, v)
		}
	}
	if v := n.do("ACL", "WHOAMI"); v.Str != "new" {
		t.Fatalf("ACL WHOAMI = %v", v)
	}
}

func TestACLWithoutUsersFile(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	if got := strs(c.do("ACL", "LIST")); !slices.Equal(got, []string{"user default on nopass ~* &* +@all"}) {
		t.Fatalf("ACL LIST without users = %v", got)
	}
	if v := c.do("ACL", "LOAD"); v.Str != msgNoACLFile {
		t.Fatalf("ACL LOAD without a users file = %v", v)
	}
	if v := c.do("ACL", "LIST", "x"); v.Str != errArity("acl|list") {
		t.Fatalf("ACL LIST x = %v", v)
	}
	if v := c.do("ACL", "SETUSER", "x"); !strings.HasPrefix(v.Str, "ERR unknown subcommand 'SETUSER'") {
		t.Fatalf("ACL SETUSER = %v", v)
	}
}

// TestKeyspaceWithoutLeader: KEYS, SCAN and DBSIZE are linearizable
// reads and refuse without a leader, as GET does; INFO keyspace tells
// this node's own table and still answers.
func TestKeyspaceWithoutLeader(t *testing.T) {
	s, f := testServer(t, Config{RequestTimeout: time.Second})
	c := dialRaw(t, s)
	c.do("SET", "k", "v")
	f.noLeader.Store(true)
	getErr := c.do("GET", "k")
	if getErr.Type != '-' {
		t.Fatalf("GET without a leader = %v", getErr)
	}
	for _, args := range [][]string{{"KEYS", "*"}, {"SCAN", "0"}, {"DBSIZE"}} {
		if v := c.do(args...); v.Type != '-' || v.Str != getErr.Str {
			t.Fatalf("%v without a leader = %v, want GET's %q", args, v, getErr.Str)
		}
	}
	if v := c.do("INFO", "keyspace"); !strings.Contains(v.Str, "db0:keys=1,") {
		t.Fatalf("INFO keyspace without a leader = %v", v)
	}
}

// TestKeyspaceInsideMulti: the walks are refused inside MULTI, and the
// transaction then fails, as for any refused command.
func TestKeyspaceInsideMulti(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	c.do("MULTI")
	if v := c.do("KEYS", "*"); v.Type != '-' || !strings.Contains(v.Str, "'keys'") || !strings.Contains(v.Str, "MULTI") {
		t.Fatalf("KEYS inside MULTI = %v", v)
	}
	if v := c.do("EXEC"); v.Type != '-' || !strings.HasPrefix(v.Str, "EXECABORT") {
		t.Fatalf("EXEC after a refused KEYS = %v", v)
	}
}
