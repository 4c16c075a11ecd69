package fsm

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm/reply"
)

// Differential test: the same command sequences against a real
// redis-server and against a Table, comparing every reply and the
// resulting key space. One sequence per script family F1–F12 of
// shared/redis-clients.md §6.2 (scripts written here in the clients'
// shape), plus sequences for the plain commands and script error texts.
//
// The Table runs on the wall clock here (cmd.Time = now in ms) so that
// TTLs and TIME are comparable; steps marked approx compare numbers
// within diffTol.

const diffTol = 250 // ms (or s for TTL/TIME) of slack for time-dependent numbers

// respConn is a minimal RESP2 client: enough to see reply kinds exactly.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func (rc *respConn) do(args ...string) (reply.Reply, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := rc.c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return reply.Reply{}, err
	}
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		return reply.Reply{}, err
	}
	return readRESP(rc.r)
}

func readRESP(r *bufio.Reader) (reply.Reply, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return reply.Reply{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return reply.Reply{}, fmt.Errorf("empty RESP line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return reply.NewStatus(body), nil
	case '-':
		return reply.NewError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return reply.NewInt(n), err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply.Reply{}, err
		}
		if n < 0 {
			return reply.Null, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return reply.Reply{}, err
		}
		return reply.NewBulk(string(buf[:n])), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply.Reply{}, err
		}
		if n < 0 {
			return reply.Reply{Kind: reply.NilArray}, nil
		}
		items := make([]reply.Reply, n)
		for i := range items {
			if items[i], err = readRESP(r); err != nil {
				return reply.Reply{}, err
			}
		}
		return reply.NewArray(items...), nil
	}
	return reply.Reply{}, fmt.Errorf("bad RESP line %q", line)
}

// startRedis runs a throw-away redis-server on a free loopback port.
func startRedis(t *testing.T) *respConn {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("redis-server not found and LOCKNODE_CI=1: %v", err)
		}
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			rc := &respConn{c: c, r: bufio.NewReader(c)}
			t.Cleanup(func() { c.Close() })
			if r, err := rc.do("PING"); err == nil && r.Str == "PONG" {
				return rc
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %s did not come up: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the readiness condition, bounded by deadline
	}
}

// dstep is one step of a differential sequence.
type dstep struct {
	cmd    []string // a command, or
	script string   // EVAL script KEYS ARGV
	keys   []string
	args   []string
	approx bool   // time-dependent reply: numbers within diffTol
	table  string // by design the Table replies this (fmtReply form) instead of what Redis replies
}

func c(args ...string) dstep { return dstep{cmd: args} }
func ca(args ...string) dstep {
	return dstep{cmd: args, approx: true}
}
func ev(script string, keys []string, args ...string) dstep {
	return dstep{script: script, keys: keys, args: args}
}
func eva(script string, keys []string, args ...string) dstep {
	return dstep{script: script, keys: keys, args: args, approx: true}
}

type diffCase struct {
	name  string
	steps []dstep
	keys  []string // compared after the sequence
	// version is the table's cluster version (0: 1), for the native
	// paths that a version gates.
	version uint32
}

// approxEqual compares replies; with approx, numbers may differ by diffTol.
func approxEqual(a, b reply.Reply, approx bool) bool {
	if a.Kind == reply.Double {
		a.Kind = reply.Bulk
	}
	if b.Kind == reply.Double {
		b.Kind = reply.Bulk
	}
	// The real server is read over RESP2, where maps, sets and score
	// pairs arrive as flat arrays.
	if a.Kind.Aggregate() {
		a.Kind = reply.Array
	}
	if b.Kind.Aggregate() {
		b.Kind = reply.Array
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case reply.Int:
		if approx {
			return math.Abs(float64(a.Int-b.Int)) <= diffTol
		}
		return a.Int == b.Int
	case reply.Bulk:
		if approx {
			fa, e1 := strconv.ParseFloat(a.Str, 64)
			fb, e2 := strconv.ParseFloat(b.Str, 64)
			if e1 == nil && e2 == nil {
				return fa == fb || math.Abs(fa-fb) <= diffTol
			}
		}
		return a.Str == b.Str
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		if len(a.Arr) != len(b.Arr) {
			return false
		}
		for i := range a.Arr {
			if !approxEqual(a.Arr[i], b.Arr[i], approx) {
				return false
			}
		}
		return true
	}
	return a.Str == b.Str
}

// dumpKey describes a key's type, contents and rounded TTL, in a form
// that does not depend on Redis' unspecified orders.
func dumpKey(do func(args ...string) reply.Reply, key string) []reply.Reply {
	typ := do("TYPE", key)
	out := []reply.Reply{typ}
	var content reply.Reply
	switch typ.Str {
	case "string":
		content = do("GET", key)
	case "hash":
		content = sortPairs(do("HGETALL", key))
	case "set":
		content = sortFlat(do("SMEMBERS", key))
	case "zset":
		content = do("ZRANGE", key, "0", "-1", "WITHSCORES")
	case "list":
		content = do("LRANGE", key, "0", "-1")
	}
	return append(out, content, do("PTTL", key))
}

func sortFlat(r reply.Reply) reply.Reply {
	sort.Slice(r.Arr, func(i, j int) bool { return r.Arr[i].Str < r.Arr[j].Str })
	return r
}

func sortPairs(r reply.Reply) reply.Reply {
	type kv struct{ k, v reply.Reply }
	var ps []kv
	for i := 0; i+1 < len(r.Arr); i += 2 {
		ps = append(ps, kv{r.Arr[i], r.Arr[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k.Str < ps[j].k.Str })
	out := []reply.Reply{}
	for _, p := range ps {
		out = append(out, p.k, p.v)
	}
	return reply.NewArray(out...)
}

func runDiff(t *testing.T, rc *respConn, dc diffCase) {
	if _, err := rc.do("FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	tb := New(DefaultConfig())
	var index uint64
	apply := func(cmd *Command) reply.Reply {
		index++
		cmd.Time = time.Now().UnixMilli()
		r := tb.Apply(index, cmd).Reply
		if err := checkMemory(tb); err != nil {
			t.Fatalf("after %v: %v", cmd.Args, err)
		}
		return r
	}
	if dc.version != 0 {
		apply(&Command{Op: OpSetVersion, Token: uint64(dc.version)})
	}
	for i, s := range dc.steps {
		var want, got reply.Reply
		var err error
		if s.cmd != nil {
			want, err = rc.do(s.cmd...)
			got = applyDiffCmd(tb, apply, s.cmd)
		} else {
			args := append([]string{"EVAL", s.script, strconv.Itoa(len(s.keys))}, s.keys...)
			want, err = rc.do(append(args, s.args...)...)
			got = apply(&Command{Op: OpEval, Script: []byte(s.script), KeysB: bargs(s.keys...), Args: bargs(s.args...)})
		}
		if err != nil {
			t.Fatalf("step %d: redis: %v", i, err)
		}
		what := strings.Join(s.cmd, " ")
		if s.cmd == nil {
			what = "EVAL " + firstLine(s.script) + " " + strings.Join(s.keys, ",") + " " + strings.Join(s.args, ",")
		}
		if s.table != "" {
			if fmtReply(got) != s.table {
				t.Errorf("step %d %s: table %s, want %s by design (redis: %s)", i, what, fmtReply(got), s.table, fmtReply(want))
			}
			continue
		}
		if !approxEqual(got, want, s.approx) {
			t.Errorf("step %d %s:\n table %s\n redis %s", i, what, fmtReply(got), fmtReply(want))
		}
	}
	for _, k := range dc.keys {
		got := dumpKey(func(args ...string) reply.Reply {
			r, ok := tb.Read(time.Now().UnixMilli(), bargs(args...))
			if !ok {
				t.Fatalf("Read refused %v", args)
			}
			return r
		}, k)
		want := dumpKey(func(args ...string) reply.Reply {
			r, err := rc.do(args...)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, k)
		if !approxEqual(reply.NewArray(got...), reply.NewArray(want...), true) {
			t.Errorf("key %q after the sequence:\n table %s\n redis %s", k, fmtReply(reply.NewArray(got...)), fmtReply(reply.NewArray(want...)))
		}
	}
}

// applyDiffCmd applies a command as the bridge would propose it: the
// script commands as their own ops, SCRIPT EXISTS as the bridge's read,
// any other as OpRedis.
func applyDiffCmd(tb *Table, apply func(*Command) reply.Reply, args []string) reply.Reply {
	b := bargs(args...)
	split := func() (keys, argv [][]byte) {
		n, _ := strconv.Atoi(args[2])
		return b[3 : 3+n], b[3+n:]
	}
	switch name := strings.ToUpper(args[0]); {
	case name == "SCRIPT" && strings.EqualFold(args[1], "LOAD"):
		return apply(&Command{Op: OpScriptLoad, Script: b[2]})
	case name == "SCRIPT" && strings.EqualFold(args[1], "FLUSH"):
		return apply(&Command{Op: OpScriptFlush})
	case name == "SCRIPT" && strings.EqualFold(args[1], "EXISTS"):
		var out []reply.Reply
		for _, in := range tb.ScriptSHAs(args[2:]) {
			out = append(out, reply.NewInt(int64(b2u(in))))
		}
		return reply.NewArray(out...)
	case name == "EVAL" || name == "EVAL_RO":
		keys, argv := split()
		return apply(&Command{Op: OpEval, Script: b[1], KeysB: keys, Args: argv, ReadOnly: name == "EVAL_RO"})
	case name == "EVALSHA" || name == "EVALSHA_RO":
		keys, argv := split()
		return apply(&Command{Op: OpEvalSHA, Key: args[1], KeysB: keys, Args: argv, ReadOnly: name == "EVALSHA_RO"})
	}
	return apply(&Command{Op: OpRedis, Args: b})
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + "…"
	}
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

func TestRedisDifferential(t *testing.T) {
	rc := startRedis(t)
	if r, err := rc.do("INFO", "server"); err != nil || !strings.Contains(r.Str, "redis_version:7.") {
		t.Logf("note: comparing against %v", firstLine(r.Str))
	}
	for _, dc := range diffCases() {
		t.Run(dc.name, func(t *testing.T) { runDiff(t, rc, dc) })
	}
}

func hotText(fam scriptFamily) string {
	for _, h := range hotScripts {
		if h.fam == fam {
			return h.text
		}
	}
	panic("no hot script")
}
