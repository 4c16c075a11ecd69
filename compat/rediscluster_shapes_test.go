package compat

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Cluster interface's replies against a real 3-master `redis-server
// --cluster-enabled yes` cluster where clients depend on their shape:
// CLUSTER SLOTS, SHARDS, NODES and INFO field sets and types, INFO's
// cluster section, the errors for bad arguments and CROSSSLOT, in RESP2
// and RESP3. Values differ by design (one shard, raft terms as epochs).

// startRedisCluster runs three cluster-enabled redis-servers, joins them
// with `redis-cli --cluster create` (three masters, no replicas) and
// waits for cluster_state:ok; it returns their addresses.
func startRedisCluster(t *testing.T) []string {
	t.Helper()
	bin := needProgram(t, "redis-server")
	cli := needProgram(t, "redis-cli")
	freePort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close() // free again for redis-server; a rare race only fails the start
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	var addrs []string
	for i := range 3 {
		port, bus := freePort(), freePort()
		cmd := exec.Command(bin, "--port", port, "--cluster-port", bus, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--save", "",
			"--appendonly", "no", "--dir", t.TempDir(), "--protected-mode", "no")
		cmd.Stdout = &lineWriter{t: t, prefix: fmt.Sprintf("redis-server %d: ", i)}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		// Ends when redis-server exits (killed by the cleanup below).
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		addr := "127.0.0.1:" + port
		eventually(t, 10*time.Second, "redis-server to answer", func() bool {
			nc, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false
			}
			nc.Close()
			return true
		})
		addrs = append(addrs, addr)
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c := dialRESP(t, addrs[0], 2)
	eventually(t, 30*time.Second, "the redis cluster to be ok", func() bool {
		r, err := c.do("CLUSTER", "INFO")
		return err == nil && strings.Contains(r.str, "cluster_state:ok")
	})
	return addrs
}

// shape renders a reply's structure: types, and the keys of maps (RESP3)
// or of the flat key/value arrays RESP2 makes of them, without values.
// keyed names the arrays holding key/value pairs in RESP2.
func shape(r rv, keyed bool) string {
	switch r.kind {
	case '*', '~', '%':
	default:
		if r.kind == '=' {
			return "$" // verbatim text: a string either way
		}
		return string(r.kind)
	}
	if r.kind == '%' || keyed {
		var fields []string
		for i := 0; i+1 < len(r.elems); i += 2 {
			fields = append(fields, r.elems[i].str+":"+shape(r.elems[i+1], false))
		}
		slices.Sort(fields)
		return "{" + strings.Join(fields, " ") + "}"
	}
	var elems []string
	for _, e := range r.elems {
		elems = append(elems, shape(e, false))
	}
	return string(r.kind) + "[" + strings.Join(elems, " ") + "]"
}

// TestRedisClusterShapesVsRedis compares reply shapes with a real
// redis-server cluster.
func TestRedisClusterShapesVsRedis(t *testing.T) {
	redisAddrs := startRedisCluster(t)
	pc := startProcCluster(t, 3, "--resp-cluster")
	lead := pc.leader(30 * time.Second)
	pc.waitMaster(ctxT(t, time.Minute), lead)
	follower := pc.resp()[(lead+1)%3]

	nodesLine := regexp.MustCompile(`^[0-9a-f]{40} [0-9.]+:\d+@\d+ (myself,)?(master|slave)(,fail)? ([0-9a-f]{40}|-) \d+ \d+ \d+ (connected|disconnected)( \d+-\d+)*$`)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := dialRESP(t, redisAddrs[0], proto)
			lc := dialRESP(t, follower, proto)
			do := func(c *respConn, args ...string) rv {
				t.Helper()
				r, err := c.do(args...)
				if err != nil {
					t.Fatalf("%q: %v", args, err)
				}
				return r
			}

			// SLOTS: one range entry's shape (three ranges there, one here;
			// a master without replicas there, with two here).
			rs, ls := do(rc, "CLUSTER", "SLOTS"), do(lc, "CLUSTER", "SLOTS")
			if len(rs.elems) != 3 || len(ls.elems) != 1 {
				t.Fatalf("CLUSTER SLOTS ranges: redis %d, locknode %d", len(rs.elems), len(ls.elems))
			}
			rEntry := shape(rs.elems[0], false)
			lEntry := ls.elems[0]
			if len(lEntry.elems) != 5 {
				t.Fatalf("locknode SLOTS entry %v: want master and two replicas", lEntry)
			}
			for i := 2; i < 5; i++ {
				one := rv{kind: lEntry.kind, elems: lEntry.elems[:3]}
				one.elems = append(append([]rv(nil), lEntry.elems[:2]...), lEntry.elems[i])
				if got := shape(one, false); got != rEntry {
					t.Errorf("SLOTS entry with node %d: locknode %s, redis %s", i, got, rEntry)
				}
			}

			// SHARDS: the shard map and each node map.
			rsh, lsh := do(rc, "CLUSTER", "SHARDS"), do(lc, "CLUSTER", "SHARDS")
			if len(lsh.elems) != 1 {
				t.Fatalf("locknode SHARDS: %v", lsh)
			}
			shard := func(r rv) (outer string, node string) {
				t.Helper()
				var nodes rv
				var parts []string
				for i := 0; i+1 < len(r.elems); i += 2 {
					if r.elems[i].str == "nodes" {
						nodes = r.elems[i+1]
						parts = append(parts, "nodes")
						continue
					}
					parts = append(parts, r.elems[i].str+":"+shape(r.elems[i+1], false))
				}
				if len(nodes.elems) == 0 {
					t.Fatalf("shard without nodes: %v", r)
				}
				slices.Sort(parts)
				return strings.Join(parts, " "), shape(nodes.elems[0], true)
			}
			ro, rn := shard(rsh.elems[0])
			lo, ln := shard(lsh.elems[0])
			if ro != lo || rn != ln {
				t.Errorf("SHARDS shard: locknode %s / node %s, redis %s / node %s", lo, ln, ro, rn)
			}

			// NODES: every line parses the same way.
			for name, c := range map[string]*respConn{"redis": rc, "locknode": lc} {
				r := do(c, "CLUSTER", "NODES")
				if r.kind != '$' && r.kind != '=' {
					t.Errorf("%s CLUSTER NODES type %c", name, r.kind)
				}
				for _, l := range strings.Split(strings.TrimSpace(r.str), "\n") {
					if !nodesLine.MatchString(l) {
						t.Errorf("%s CLUSTER NODES line %q", name, l)
					}
				}
			}

			// INFO: locknode's fields are Redis' (Redis has more gossip
			// counters), and Redis' non-counter fields are all there.
			fieldsOf := func(text string) map[string]bool {
				m := map[string]bool{}
				for _, l := range strings.Split(text, "\n") {
					if k, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
						m[k] = true
					}
				}
				return m
			}
			ri, li := fieldsOf(do(rc, "CLUSTER", "INFO").str), fieldsOf(do(lc, "CLUSTER", "INFO").str)
			for f := range li {
				if !ri[f] {
					t.Errorf("CLUSTER INFO field %s: not Redis'", f)
				}
			}
			for f := range ri {
				if !li[f] && !strings.HasPrefix(f, "cluster_stats_messages_") {
					t.Errorf("CLUSTER INFO lacks Redis' field %s", f)
				}
			}
			for name, c := range map[string]*respConn{"redis": rc, "locknode": lc} {
				if r := do(c, "INFO", "cluster"); !strings.Contains(r.str, "cluster_enabled:1") {
					t.Errorf("%s INFO cluster = %q", name, r.str)
				}
				if r := do(c, "CLUSTER", "MYID"); len(r.str) != 40 {
					t.Errorf("%s CLUSTER MYID = %v", name, r)
				}
			}

			// The same answers: key slots, errors of bad arguments,
			// CROSSSLOT before any redirection, ASKING and READONLY.
			for _, args := range [][]string{
				{"CLUSTER", "KEYSLOT", "x"},
				{"CLUSTER", "KEYSLOT", "{user1}:x"},
				{"CLUSTER", "KEYSLOT", "foo{}{bar}"},
				{"CLUSTER", "KEYSLOT"},
				{"CLUSTER", "GETKEYSINSLOT", "-1", "5"},
				{"CLUSTER", "GETKEYSINSLOT", "5", "-1"},
				{"CLUSTER", "GETKEYSINSLOT", "5", "x"},
				{"CLUSTER", "GETKEYSINSLOT", "16384", "1"},
				{"CLUSTER", "COUNTKEYSINSLOT", "99999"},
				{"CLUSTER", "COUNTKEYSINSLOT", "x"},
				{"CLUSTER", "FOO"},
				{"MSET", "x", "1", "y", "2"},
				{"DEL", "x", "y"},
				{"EVAL", "return 1", "2", "x", "y"},
				{"ASKING"},
				{"READONLY"},
				{"READWRITE"},
			} {
				want, got := do(rc, args...), do(lc, args...)
				if want.String() != got.String() {
					t.Errorf("%q: locknode %v, redis %v", args, got, want)
				}
			}
			// COMMAND: the fields cluster clients read (name, arity, flags,
			// first key, last key, step) have Redis' types and key
			// positions; GETKEYS finds the same keys.
			for _, name := range []string{"get", "set", "mset", "del", "exists", "ping"} {
				want, got := do(rc, "COMMAND", "INFO", name), do(lc, "COMMAND", "INFO", name)
				if len(want.elems) != 1 || len(got.elems) != 1 || len(got.elems[0].elems) != 10 || len(want.elems[0].elems) < 6 {
					t.Fatalf("COMMAND INFO %s: locknode %v, redis %v", name, got, want)
				}
				w, g := want.elems[0].elems, got.elems[0].elems
				for i, f := range []string{"name", "arity", "flags", "first key", "last key", "step"} {
					same := w[i].String() == g[i].String()
					if i == 2 { // flags differ in detail: a set (RESP2 array) of statuses
						same = w[i].kind == g[i].kind && len(g[i].elems) > 0 && g[i].elems[0].kind == w[i].elems[0].kind
					}
					if !same {
						t.Errorf("COMMAND INFO %s %s: locknode %v, redis %v", name, f, g[i], w[i])
					}
				}
			}
			for _, args := range [][]string{{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, {"COMMAND", "GETKEYS", "GET", "k"}} {
				if want, got := do(rc, args...), do(lc, args...); want.String() != got.String() {
					t.Errorf("%q: locknode %v, redis %v", args, got, want)
				}
			}

			// A keyed command on a node that does not serve its slot:
			// MOVED with the slot and the master's address.
			if want, got := do(rc, "SET", "x", "1"), do(lc, "SET", "x", "1"); want.kind != '-' ||
				!strings.HasPrefix(want.str, "MOVED 16287 ") || got.str != "MOVED 16287 "+pc.resp()[lead] {
				t.Errorf("SET x: locknode follower %v, redis %v", got, want)
			}
			// A MULTI block across slots (w: 3696, k2: 449, both the first
			// redis master's): queued, then refused by EXEC.
			leader := dialRESP(t, pc.resp()[lead], proto)
			for _, args := range [][]string{{"MULTI"}, {"SET", "w", "1"}, {"SET", "k2", "1"}, {"EXEC"}} {
				want, got := do(rc, args...), do(leader, args...)
				if want.String() != got.String() {
					t.Errorf("%q in MULTI: locknode %v, redis %v", args, got, want)
				}
			}
		})
	}
}
