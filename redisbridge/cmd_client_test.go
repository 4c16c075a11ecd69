package redisbridge

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClientListKillRole: CLIENT LIST shows every connection of the node
// with its name, filtered by TYPE and ID; CLIENT KILL by each filter ends
// exactly the matching connections (not the caller unless SKIPME no or
// the old form), with Redis' replies; ROLE is a master without replicas.
func TestClientListKillRole(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			s, _ := testServer(t, Config{})
			a, b, sub := dialRaw(t, s), dialRaw(t, s), dialRaw(t, s)
			for _, c := range []*rawConn{a, b, sub} {
				if v := c.do("HELLO", proto); v.Type == '-' {
					t.Fatalf("HELLO: %v", v)
				}
			}
			b.do("CLIENT", "SETNAME", "bee")
			sub.do("SUBSCRIBE", "ch")
			id := func(c *rawConn) string {
				if c == sub {
					return "" // in RESP2 subscribe mode CLIENT ID is refused
				}
				return strconv.FormatInt(c.do("CLIENT", "ID").Int, 10)
			}
			aid, bid := id(a), id(b)

			if got := a.do("ROLE").String(); got != `*["master" 0 *[]]` {
				t.Fatalf("ROLE: %s", got)
			}
			list := a.do("CLIENT", "LIST")
			lines := strings.Split(strings.TrimSuffix(list.Str, "\n"), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "id="+aid+" ") ||
				!strings.HasPrefix(lines[1], "id="+bid+" ") || !strings.Contains(lines[1], " name=bee ") ||
				!strings.Contains(lines[2], " sub=1 ") || !strings.Contains(lines[1], " resp="+proto) {
				t.Fatalf("CLIENT LIST:\n%s", list.Str)
			}
			if got := a.do("CLIENT", "LIST", "TYPE", "pubsub").Str; strings.Count(got, "\n") != 1 || !strings.Contains(got, " sub=1 ") {
				t.Fatalf("CLIENT LIST TYPE pubsub: %q", got)
			}
			if got := a.do("CLIENT", "LIST", "ID", bid, "12345").Str; strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "id="+bid+" ") {
				t.Fatalf("CLIENT LIST ID: %q", got)
			}
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"CLIENT", "LIST", "TYPE", "x"}, "ERR Unknown client type 'x'"},
				{[]string{"CLIENT", "LIST", "ID", "x"}, "ERR Invalid client ID"},
				{[]string{"CLIENT", "LIST", "foo"}, msgSyntax},
				{[]string{"CLIENT", "KILL", "ID", "0"}, "ERR client-id should be greater than 0"},
				{[]string{"CLIENT", "KILL", "ID", "1", "SKIPME"}, msgSyntax},
				{[]string{"CLIENT", "KILL", "USER", "nobody", "SKIPME", "no"}, "ERR No such user 'nobody'"},
				{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, msgSyntax},
				{[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "ERR No such client"},
				{[]string{"CLIENT", "NO-EVICT", "maybe"}, msgSyntax},
			} {
				if v := a.do(tc.args...); v.Type != '-' || v.Str != tc.want {
					t.Errorf("%q: %v, want -%s", tc.args, v, tc.want)
				}
			}
			// USER default matches every connection; SKIPME (default yes)
			// spares the caller.
			if v := a.do("CLIENT", "KILL", "ID", bid); v.Int != 1 {
				t.Fatalf("CLIENT KILL ID: %v", v)
			}
			waitClosed(t, b)
			if v := a.do("CLIENT", "KILL", "ID", aid); v.Int != 0 {
				t.Fatalf("CLIENT KILL ID of the caller with SKIPME yes: %v", v)
			}
			if v := a.do("CLIENT", "KILL", "TYPE", "pubsub", "USER", "default"); v.Int != 1 {
				t.Fatalf("CLIENT KILL TYPE pubsub: %v", v)
			}
			waitClosed(t, sub)
			if v := a.do("CLIENT", "NO-EVICT", "on"); v.Str != "OK" {
				t.Fatalf("CLIENT NO-EVICT: %v", v)
			}
			if v := a.do("CLIENT", "HELP"); len(v.Elems) != len(clientHelp) {
				t.Fatalf("CLIENT HELP: %v", v)
			}
			// The old form may kill the caller: +OK, then the connection ends.
			laddr := a.nc.LocalAddr().String()
			if v := a.do("CLIENT", "KILL", laddr); v.Str != "OK" {
				t.Fatalf("CLIENT KILL addr: %v", v)
			}
			waitClosed(t, a)
		})
	}
}

// waitClosed waits until the server has closed c.
func waitClosed(t *testing.T, c *rawConn) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := c.br.Read(buf); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("connection still open")
			}
			return
		}
	}
}
