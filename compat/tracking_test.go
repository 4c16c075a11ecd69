package compat

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Client-side caching (CLIENT TRACKING) compared byte for byte with
// redis-server: each scenario runs its connections against a redis-server
// and against a cluster, where the reading and the writing connection sit
// on different nodes, and the transcripts (every reply and every push, as
// raw RESP frames) must be identical once client ids are replaced by
// their role.

// trkConn is one connection of a tracking scenario.
type trkConn struct {
	t   *testing.T
	nc  net.Conn
	br  *bufio.Reader
	log *strings.Builder
	tag string
}

func dialTrk(t *testing.T, addr, tag string, log *strings.Builder) *trkConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &trkConn{t: t, nc: nc, br: bufio.NewReader(nc), log: log, tag: tag}
}

// do sends a command and logs its reply frame.
func (c *trkConn) do(args ...string) string {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		c.t.Fatalf("%s: write: %v", c.tag, err)
	}
	fmt.Fprintf(c.log, "%s> %s\n", c.tag, strings.Join(args, " "))
	if strings.EqualFold(args[0], "hello") {
		// Version and id differ by design; the shape is compared elsewhere.
		log := c.log
		c.log = &strings.Builder{}
		defer func() { c.log = log }()
	}
	return c.frame()
}

// pipe sends commands in one write, without reading.
func (c *trkConn) pipe(cmds ...[]string) {
	c.t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		fmt.Fprintf(c.log, "%s> %s (pipelined)\n", c.tag, strings.Join(args, " "))
	}
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		c.t.Fatalf("%s: write: %v", c.tag, err)
	}
}

// frame reads and logs the next frame (a reply or a push).
func (c *trkConn) frame() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	if err := readFrame(c.br, &b); err != nil {
		c.t.Fatalf("%s: read: %v (so far %q; transcript:\n%s)", c.tag, err, b.String(), c.log.String())
	}
	fmt.Fprintf(c.log, "%s< %q\n", c.tag, b.String())
	return b.String()
}

// quiet checks that nothing more arrives within d (no push that should
// not be there).
func (c *trkConn) quiet(d time.Duration) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	if b, err := c.br.Peek(1); err == nil {
		var rest strings.Builder
		_ = readFrame(c.br, &rest)
		c.t.Fatalf("%s: unexpected frame %q (%q)", c.tag, b, rest.String())
	}
	fmt.Fprintf(c.log, "%s: quiet\n", c.tag)
}

// waitGone waits until the server no longer lists client id (off the
// transcript: how long that takes is no part of the comparison).
func (c *trkConn) waitGone(id string) {
	c.t.Helper()
	log := c.log
	c.log = &strings.Builder{}
	defer func() { c.log = log }()
	eventually(c.t, 10*time.Second, "client "+id+" to be gone", func() bool {
		return c.do("CLIENT", "LIST", "ID", id) == "$0\r\n\r\n" || strings.HasPrefix(c.do("CLIENT", "LIST", "ID", id), "=")
	})
}

// readFrame copies one RESP2/RESP3 frame's bytes into out.
func readFrame(br *bufio.Reader, out *strings.Builder) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*', '~', '>', '%', '|':
		n, _ := strconv.Atoi(body)
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if err := readFrame(br, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// trkScenario drives connections opened by open(role, node): node picks
// the cluster node (ignored against redis-server).
type trkScenario struct {
	name string
	run  func(open func(tag string, node int) *trkConn)
}

func trackingScenarios() []trkScenario {
	const quiet = 300 * time.Millisecond
	return []trkScenario{
		{"RESP3 default mode: read, then another node writes", func(open func(string, int) *trkConn) {
			a, b := open("A", 0), open("B", 1)
			a.do("HELLO", "3")
			a.do("CLIENT", "TRACKING", "ON")
			a.do("GET", "trk:k")
			b.do("SET", "trk:k", "v1")
			a.frame() // invalidate [trk:k]
			a.do("GET", "trk:k")
			b.do("DEL", "trk:k")
			a.frame()
			// Not read again since: no more invalidations for it.
			b.do("SET", "trk:k", "v2")
			a.quiet(quiet)
			a.do("CLIENT", "TRACKINGINFO")
			a.do("CLIENT", "GETREDIR")
			a.do("CLIENT", "TRACKING", "OFF")
			a.do("CLIENT", "TRACKINGINFO")
			a.do("CLIENT", "GETREDIR")
		}},
		{"RESP3 own write invalidates, NOLOOP does not", func(open func(string, int) *trkConn) {
			a, b := open("A", 0), open("B", 1)
			a.do("HELLO", "3")
			a.do("CLIENT", "TRACKING", "ON")
			a.do("GET", "trk:own")
			a.do("SET", "trk:own", "1")
			a.frame()
			// Pipelined: the invalidation of its own write follows that
			// write's reply.
			a.do("GET", "trk:own")
			a.pipe([]string{"SET", "trk:own", "p1"}, []string{"SET", "trk:own", "p2"}, []string{"GET", "trk:own"})
			for range 4 {
				a.frame()
			}
			a.do("CLIENT", "TRACKING", "ON", "NOLOOP")
			a.do("GET", "trk:own")
			a.do("SET", "trk:own", "2") // no invalidation: its own write
			a.do("GET", "trk:other")
			b.do("SET", "trk:other", "x")
			a.frame() // the next push is trk:other's
			a.do("CLIENT", "TRACKINGINFO")
		}},
		{"RESP3 OPTIN and OPTOUT", func(open func(string, int) *trkConn) {
			a, b := open("A", 0), open("B", 1)
			a.do("HELLO", "3")
			a.do("CLIENT", "CACHING", "YES")
			a.do("CLIENT", "TRACKING", "ON", "OPTIN")
			a.do("CLIENT", "CACHING", "NO")
			a.do("GET", "trk:in1")
			a.do("CLIENT", "CACHING", "YES")
			a.do("CLIENT", "TRACKINGINFO")
			a.do("GET", "trk:in2")
			a.do("CLIENT", "TRACKINGINFO")
			b.do("SET", "trk:in1", "x")
			b.do("SET", "trk:in2", "x")
			a.frame() // only trk:in2
			// CACHING YES covers a whole MULTI block (rueidis' shape).
			a.do("CLIENT", "CACHING", "YES")
			a.do("MULTI")
			a.do("PTTL", "trk:in3")
			a.do("GET", "trk:in3")
			a.do("EXEC")
			b.do("SET", "trk:in3", "x")
			a.frame()
			a.do("CLIENT", "TRACKING", "ON", "OPTOUT")
			a.do("CLIENT", "TRACKING", "OFF")
			a.do("CLIENT", "TRACKING", "ON", "OPTOUT")
			a.do("CLIENT", "CACHING", "NO")
			a.do("CLIENT", "TRACKINGINFO")
			a.do("GET", "trk:out1")
			a.do("GET", "trk:out2")
			b.do("SET", "trk:out1", "x")
			b.do("SET", "trk:out2", "x")
			a.frame() // only trk:out2
		}},
		{"RESP3 keys a script or MULTI block reads, after its own writes", func(open func(string, int) *trkConn) {
			a, b := open("A", 0), open("B", 1)
			a.do("HELLO", "3")
			a.do("CLIENT", "TRACKING", "ON", "OPTOUT")
			// rueidislock's acquire shape: SET NX, then GET to track the key.
			a.do("EVAL", `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`, "1", "trk:s", "tok", "10000")
			a.do("EVAL", `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE",KEYS[1],ARGV[2]) end;return 0`, "1", "trk:s", "other", "10000")
			b.do("DEL", "trk:s")
			a.frame()
			a.do("MULTI")
			a.do("SET", "trk:m", "1")
			a.do("GET", "trk:m")
			a.do("EXEC")
			b.do("SET", "trk:m", "2")
			a.frame()
			// CACHING NO: the next script's keys are not tracked.
			a.do("CLIENT", "CACHING", "NO")
			a.do("EVAL", `return redis.call("GET",KEYS[1])`, "1", "trk:n")
			a.do("EVAL", `return redis.call("GET",KEYS[1])`, "1", "trk:n2")
			b.do("SET", "trk:n", "x")
			b.do("SET", "trk:n2", "x")
			a.frame() // only trk:n2
		}},
		{"RESP3 BCAST with prefixes", func(open func(string, int) *trkConn) {
			a, b := open("A", 0), open("B", 1)
			a.do("HELLO", "3")
			a.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "trk:b:", "PREFIX", "trk:c:")
			a.do("CLIENT", "TRACKINGINFO")
			b.do("SET", "trk:b:1", "x")
			a.frame()
			b.do("SET", "trk:z", "x") // no prefix of A's
			b.do("MSET", "trk:c:1", "x", "trk:c:2", "y")
			a.frame() // trk:c:1 and trk:c:2 in one message
			b.do("HSET", "trk:b:h", "f", "v")
			a.frame()
			b.do("ZADD", "trk:b:z", "1", "m")
			a.frame()
			a.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "trk:b:x")
			a.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "trk:d:")
			a.do("CLIENT", "TRACKINGINFO")
		}},
		{"RESP2 redirect to a subscribed connection", func(open func(string, int) *trkConn) {
			r, a, b := open("R", 0), open("A", 0), open("B", 2)
			id := strings.TrimSpace(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"))
			r.do("SUBSCRIBE", "__redis__:invalidate")
			a.do("CLIENT", "TRACKING", "ON", "REDIRECT", id)
			a.do("GET", "trk:r2")
			b.do("SET", "trk:r2", "x")
			r.frame() // message __redis__:invalidate [trk:r2]
			a.do("CLIENT", "TRACKINGINFO")
			a.do("CLIENT", "TRACKING", "ON", "REDIRECT", id, "REDIRECT", id)
		}},
		{"RESP3 redirect to a connection that left", func(open func(string, int) *trkConn) {
			r, a, b := open("R", 0), open("A", 0), open("B", 1)
			id := strings.TrimSpace(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"))
			a.do("HELLO", "3")
			a.do("CLIENT", "TRACKING", "ON", "REDIRECT", id)
			a.do("GET", "trk:gone")
			r.nc.Close()
			a.waitGone(id)
			b.do("SET", "trk:gone", "x")
			a.frame() // tracking-redir-broken id
			a.do("CLIENT", "TRACKINGINFO")
		}},
	}
}

// normaliseIDs replaces client ids (learnt from CLIENT ID replies) where
// they appear (REDIRECT arguments, redirect fields, broken-redirect
// pushes).
func normaliseIDs(s string) string {
	ids := regexp.MustCompile(`> CLIENT ID\n\w+< ":(\d+)\\r\\n"`).FindAllStringSubmatch(s, -1)
	for i, m := range ids {
		id, name := m[1], fmt.Sprintf("ID%d", i)
		for _, f := range []string{"REDIRECT %s", `< ":%s\r\n"`, `redirect\r\n:%s\r\n`, `tracking-redir-broken\r\n:%s\r\n`, "LIST ID %s"} {
			s = strings.ReplaceAll(s, fmt.Sprintf(f, id), fmt.Sprintf(f, name))
		}
	}
	return s
}

func TestTrackingVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	for _, sc := range trackingScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var want, got strings.Builder
			sc.run(func(tag string, _ int) *trkConn { return dialTrk(t, redisAddr, tag, &want) })
			sc.run(func(tag string, node int) *trkConn { return dialTrk(t, tc.resp[node], tag, &got) })
			w, g := normaliseIDs(want.String()), normaliseIDs(got.String())
			if w != g {
				if d := os.Getenv("LOCKNODE_TRK_DUMP"); d != "" {
					os.WriteFile(d+"/want.txt", []byte(w), 0o644)
					os.WriteFile(d+"/got.txt", []byte(g), 0o644)
				}
				t.Fatalf("transcripts differ\nredis-server:\n%s\nlocknode:\n%s", w, g)
			}
			t.Logf("transcript:\n%s", g)
		})
	}
}
