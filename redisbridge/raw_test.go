package redisbridge

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rawCases: bytes a client sends, and the exact bytes Redis 7 answers
// (captured from redis-server 7.0.15; the differential test re-checks the
// ones marked same against a live redis-server). close: the server then
// closes the connection (protocol errors).
var rawCases = []struct {
	name  string
	in    string
	want  string
	close bool
	same  bool // identical on redis-server (after normalising ids/versions)
}{
	{"ping", "PING\r\n", "+PONG\r\n", false, true},
	{"ping msg", "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", "$2\r\nhi\r\n", false, true},
	{"ping arity", "PING a b\r\n", "-ERR wrong number of arguments for 'ping' command\r\n", false, true},
	{"echo", "ECHO tracer-1\r\n", "$8\r\ntracer-1\r\n", false, true},
	{"echo arity", "echo\r\n", "-ERR wrong number of arguments for 'echo' command\r\n", false, true},
	{"pipeline and empty", "*0\r\n*-1\r\nPING\r\n\r\nPING\n", "+PONG\r\n+PONG\r\n", false, true},
	{"unknown", "*3\r\n$3\r\nfoo\r\n$1\r\na\r\n$1\r\nb\r\n", "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n", false, true},
	{"unknown no args", "WAITAOFX\r\n", "-ERR unknown command 'WAITAOFX', with args beginning with: \r\n", false, true},
	{"bad multibulk", "*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n", true, true},
	{"not a bulk", "*2\r\n+foo\r\n", "-ERR Protocol error: expected '$', got '+'\r\n", true, true},
	{"bad bulk length", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n", true, true},
	{"negative bulk", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n", true, true},
	{"huge bulk", "*1\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length\r\n", true, true},
	{"huge multibulk", "*9999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n", true, true},
	{"unbalanced quotes", "PING \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n", true, true},
	{"too big inline", strings.Repeat("x", 70000), "-ERR Protocol error: too big inline request\r\n", true, true},
	{"hello 3", "HELLO 3\r\n", "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:ID\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n", false, true},
	{"hello 2", "HELLO 2\r\n", "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:ID\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n", false, true},
	{"hello 4", "HELLO 4\r\n", "-NOPROTO unsupported protocol version\r\n", false, true},
	{"hello x", "HELLO x\r\n", "-ERR Protocol version is not an integer or out of range\r\n", false, true},
	{"hello bad option", "HELLO 3 FOO\r\n", "-ERR Syntax error in HELLO option 'FOO'\r\n", false, true},
	{"hello auth short", "HELLO 2 AUTH a\r\n", "-ERR Syntax error in HELLO option 'AUTH'\r\n", false, true},
	{"hello bad name", "HELLO 3 SETNAME \"a b\"\r\n", "-ERR Client names cannot contain spaces, newlines or special characters.\r\n", false, true},
	{"auth without password", "AUTH x\r\n", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n", false, true},
	{"auth unknown user", "AUTH x y\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n", false, true},
	{"select 0", "SELECT 0\r\n", "+OK\r\n", false, true},
	{"select x", "SELECT x\r\n", "-ERR value is not an integer or out of range\r\n", false, true},
	{"select 16", "SELECT 16\r\n", "-ERR DB index is out of range\r\n", false, true},
	{"client", "CLIENT GETNAME\r\nCLIENT SETNAME app\r\nCLIENT GETNAME\r\nCLIENT FOO\r\nCLIENT SETNAME a b\r\n",
		"$-1\r\n+OK\r\n$3\r\napp\r\n-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n-ERR wrong number of arguments for 'client|setname' command\r\n", false, true},
	{"client setinfo (7.2)", "CLIENT SETINFO LIB-NAME x\r\nCLIENT SETINFO LIB-VER 1\r\n", "+OK\r\n+OK\r\n", false, false},
	{"config get unknown", "CONFIG GET nope\r\n", "*0\r\n", false, true},
	{"cluster", "CLUSTER NODES\r\n", "-ERR This instance has cluster support disabled\r\n", false, true},
	{"wait", "WAIT 0 0\r\n", ":0\r\n", false, true},
	{"wait bad", "WAIT x 0\r\n", "-ERR value is not an integer or out of range\r\n", false, true},
	{"evalsha unknown", "EVALSHA aaaa 0\r\n", "-NOSCRIPT No matching script. Please use EVAL.\r\n", false, true},
	{"script load", "SCRIPT LOAD \"return 1\"\r\nSCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db ffffffffffffffffffffffffffffffffffffffff\r\n",
		"$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n*2\r\n:1\r\n:0\r\n", false, true},
	{"script unknown", "SCRIPT FOO\r\n", "-ERR unknown subcommand 'FOO'. Try SCRIPT HELP.\r\n", false, true},
	{"get arity", "GET\r\n", "-ERR wrong number of arguments for 'get' command\r\n", false, true},
	{"set syntax", "SET a b c\r\n", "-ERR syntax error\r\n", false, true},
	{"multi arity abort", "MULTI\r\nSET a\r\nEXEC\r\n", "+OK\r\n-ERR wrong number of arguments for 'set' command\r\n-EXECABORT Transaction discarded because of previous errors.\r\n", false, true},
	{"multi unknown abort", "MULTI\r\nNOPE\r\nEXEC\r\n", "+OK\r\n-ERR unknown command 'NOPE', with args beginning with: \r\n-EXECABORT Transaction discarded because of previous errors.\r\n", false, true},
	{"multi errors", "MULTI\r\nMULTI\r\nDISCARD\r\nEXEC\r\nWATCH a\r\nMULTI\r\nWATCH a\r\n",
		"+OK\r\n-ERR MULTI calls can not be nested\r\n+OK\r\n-ERR EXEC without MULTI\r\n+OK\r\n+OK\r\n-ERR WATCH inside MULTI is not allowed\r\n", false, true},
	{"multi exec", "MULTI\r\nSET k v\r\nGET k\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\nv\r\n", false, true},
	{"exec discard alone", "EXEC\r\nDISCARD\r\n", "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n", false, true},
	{"subscribe mode resp2", "SUBSCRIBE a\r\nGET x\r\nPING\r\nPING m\r\n",
		"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n*2\r\n$4\r\npong\r\n$1\r\nm\r\n", false, true},
	{"subscribe mode resp3", "HELLO 3\r\nSUBSCRIBE a\r\nGET x\r\nPING\r\nUNSUBSCRIBE\r\n",
		"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:ID\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n_\r\n+PONG\r\n>3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n", false, true},
	{"unsubscribe none", "UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\n", "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n", false, true},
	{"publish", "PUBLISH c m\r\n", ":0\r\n", false, true},
	{"quit", "QUIT\r\nPING\r\n", "+OK\r\n", true, true},
	{"readonly", "READONLY\r\n", "+OK\r\n", false, false},
	{"waitaof", "WAITAOF 0 0 0\r\n", "*2\r\n:1\r\n:0\r\n", false, false},
}

var idRE = regexp.MustCompile(`\$2\r\nid\r\n:\d+\r\n`)

func normaliseReply(s, version string) string {
	s = idRE.ReplaceAllString(s, "$$2\r\nid\r\n:ID\r\n")
	return strings.ReplaceAll(s, "$"+itoa(len(version))+"\r\n"+version+"\r\n", "$5\r\n7.2.4\r\n")
}

// exchange sends in on a fresh connection to addr and reads the answer:
// want bytes (normalising may change lengths a little, so a few more are
// allowed to arrive), then, when wantClose, until the server closes.
func exchange(t *testing.T, addr, in string, want int, wantClose bool) (out string, closed bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rc := &rawConn{t: t, nc: nc}
	rc.send(in)
	var b strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b.Len() >= want && !wantClose {
			// Anything extra would arrive right behind the expected bytes.
			deadline = time.Now().Add(20 * time.Millisecond)
		}
		nc.SetReadDeadline(deadline)
		n, err := nc.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			ne, ok := err.(net.Error)
			return b.String(), !(ok && ne.Timeout())
		}
	}
}

func TestRawProtocol(t *testing.T) {
	s, _ := testServer(t, Config{})
	for _, tc := range rawCases {
		t.Run(tc.name, func(t *testing.T) {
			out, closed := exchange(t, s.Addr(), tc.in, len(tc.want), tc.close)
			if got := normaliseReply(out, DefaultVersion); got != tc.want {
				t.Fatalf("reply\n got %q\nwant %q", got, tc.want)
			}
			if closed != tc.close {
				t.Fatalf("connection closed = %v, want %v", closed, tc.close)
			}
		})
	}
}

// needProgram skips unless the program exists, or fails under LOCKNODE_CI=1.
func needProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("%s not installed (LOCKNODE_CI=1)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// startRefRedis runs a throwaway redis-server on a free port.
func startRefRedis(t *testing.T) string {
	t.Helper()
	bin := needProgram(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	eventually(t, 5*time.Second, "redis-server to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestRawProtocolVsRedis replays the cases marked same against a live
// redis-server: the bridge must answer byte for byte as Redis does.
func TestRawProtocolVsRedis(t *testing.T) {
	addr := startRefRedis(t)
	version := redisVersion(t, addr)
	for _, tc := range rawCases {
		if !tc.same {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			out, closed := exchange(t, addr, tc.in, len(tc.want), tc.close)
			if got := normaliseReply(out, version); got != tc.want {
				t.Fatalf("redis-server %s replied\n got %q\nwant %q", version, got, tc.want)
			}
			if closed != tc.close {
				t.Fatalf("redis-server closed = %v, want %v", closed, tc.close)
			}
		})
	}
}

func redisVersion(t *testing.T, addr string) string {
	out, _ := exchange(t, addr, "INFO server\r\n", 200, false)
	m := regexp.MustCompile(`redis_version:([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no redis_version in %q", out)
	}
	return m[1]
}
