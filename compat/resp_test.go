package compat

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rv is one reply exactly as it came off the wire, RESP2 or RESP3.
type rv struct {
	kind  byte   // the RESP type byte; '_' also for RESP2 null bulk/array
	str   string // simple/bulk/verbatim string, error text, double or big number text
	num   int64  // integer, boolean (0/1)
	elems []rv   // array, set, push; map as key, value, key, value ...
}

// String renders a reply canonically: equal replies render equally.
func (r rv) String() string {
	switch r.kind {
	case '+':
		return "+" + r.str
	case '-':
		return "-" + r.str
	case ':':
		return ":" + strconv.FormatInt(r.num, 10)
	case '$':
		return strconv.Quote(r.str)
	case '_':
		return "nil"
	case '#':
		return "#" + strconv.FormatBool(r.num == 1)
	case ',', '(':
		return string(r.kind) + r.str
	}
	var b strings.Builder
	b.WriteByte(r.kind)
	b.WriteByte('[')
	for i, e := range r.elems {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(e.String())
	}
	b.WriteByte(']')
	return b.String()
}

// respConn is a plain RESP client that keeps reply types exact.
type respConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dialRESP(t testing.TB, addr string, proto int) *respConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &respConn{nc: nc, br: bufio.NewReader(nc)}
	if proto == 3 {
		r, err := c.do("HELLO", "3")
		if err != nil || r.kind != '%' {
			t.Fatalf("%s: HELLO 3 = %v, %v; want a map", addr, r, err)
		}
	}
	return c
}

func (c *respConn) do(args ...string) (rv, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.nc.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		return rv{}, err
	}
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		return rv{}, err
	}
	return readRV(c.br)
}

func readRV(br *bufio.Reader) (rv, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return rv{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return rv{}, fmt.Errorf("empty RESP line")
	}
	kind, body := line[0], line[1:]
	switch kind {
	case '+', '-', ',', '(':
		return rv{kind: kind, str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return rv{kind: ':', num: n}, err
	case '#':
		return rv{kind: '#', num: map[string]int64{"t": 1, "f": 0}[body]}, nil
	case '_':
		return rv{kind: '_'}, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return rv{}, err
		}
		if n < 0 {
			return rv{kind: '_'}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return rv{}, err
		}
		s := string(buf[:n])
		switch kind {
		case '=':
			s = s[min(4, len(s)):] // "txt:" prefix
		case '!':
			return rv{kind: '-', str: s}, nil
		}
		return rv{kind: '$', str: s}, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return rv{}, err
		}
		if n < 0 {
			return rv{kind: '_'}, nil
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		r := rv{kind: kind}
		if kind == '|' || kind == '>' || kind == '~' {
			r.kind = map[byte]byte{'|': '%', '>': '>', '~': '~'}[kind]
		}
		for range n {
			e, err := readRV(br)
			if err != nil {
				return rv{}, err
			}
			r.elems = append(r.elems, e)
		}
		return r, nil
	}
	return rv{}, fmt.Errorf("bad RESP line %q", line)
}

// sameReply compares replies exactly, except that when approx is set,
// integers and numeric strings may differ by up to tol (TTLs, TIME).
func sameReply(a, b rv, approx bool, tol float64) bool {
	if a.kind != b.kind || len(a.elems) != len(b.elems) {
		return false
	}
	switch a.kind {
	case ':':
		if approx {
			return math.Abs(float64(a.num-b.num)) <= tol && (a.num < 0) == (b.num < 0)
		}
		return a.num == b.num
	case '$', ',':
		if approx && a.str != b.str {
			x, err1 := strconv.ParseFloat(a.str, 64)
			y, err2 := strconv.ParseFloat(b.str, 64)
			return err1 == nil && err2 == nil && math.Abs(x-y) <= tol
		}
		return a.str == b.str
	case '+', '-', '(':
		return a.str == b.str
	case '#':
		return a.num == b.num
	}
	for i := range a.elems {
		if !sameReply(a.elems[i], b.elems[i], approx, tol) {
			return false
		}
	}
	return true
}

// sortedPairs sorts a flat key/value array (or RESP3 map) by key, so that
// hash dumps compare regardless of field order.
func sortedPairs(r rv) rv {
	type kv struct{ k, v rv }
	var ps []kv
	for i := 0; i+1 < len(r.elems); i += 2 {
		ps = append(ps, kv{r.elems[i], r.elems[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k.String() < ps[j].k.String() })
	out := rv{kind: r.kind}
	for _, p := range ps {
		out.elems = append(out.elems, p.k, p.v)
	}
	return out
}

// sortedElems sorts an array or set reply (set members come in any order).
func sortedElems(r rv) rv {
	out := rv{kind: r.kind, elems: append([]rv(nil), r.elems...)}
	sort.Slice(out.elems, func(i, j int) bool { return out.elems[i].String() < out.elems[j].String() })
	return out
}

// startRedis runs a throw-away redis-server on a free loopback port,
// without persistence, stopped at the end of the test.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := needProgram(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // the port is free again for redis-server; a rare race only fails the start below
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--protected-mode", "no")
	cmd.Stdout = &lineWriter{t: t, prefix: "redis-server: "}
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
	eventually(t, 10*time.Second, "redis-server to answer PING", func() bool {
		select {
		case <-exited:
			t.Fatalf("redis-server exited at start-up")
		default:
		}
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer nc.Close()
		c := &respConn{nc: nc, br: bufio.NewReader(nc)}
		r, err := c.do("PING")
		return err == nil && r.kind == '+'
	})
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	return addr
}
