package redisbridge

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// FuzzConn feeds arbitrary bytes to a live server connection: the codec,
// the command table, every handler's argument parsing and the FSM's
// Redis commands behind them. Whatever arrives, the server must not
// panic (a panic in a connection goroutine kills the process), must not
// hang, and must keep serving other connections.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		"PING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET lock tok NX PX 1000\r\nGET lock\r\nPTTL lock\r\nDEL lock\r\n",
		"HELLO 3\r\nHGETALL h\r\nHSET h a 1 b 2\r\nHGETALL h\r\nSMEMBERS s\r\n",
		"MULTI\r\nINCR c\r\nEVAL \"return redis.call('get', KEYS[1])\" 1 c\r\nEXEC\r\n",
		"WATCH w\r\nMULTI\r\nSET w 1\r\nEXEC\r\nDISCARD\r\n",
		"EVAL \"if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end\" 1 k v\r\n",
		"EVALSHA 0000000000000000000000000000000000000000 0\r\nSCRIPT LOAD \"return 1\"\r\nSCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n",
		"LOCK.ACQUIRE k o 1000 MODE shared\r\nLOCK.INFO k\r\nLOCK.EXTEND k o 2000\r\nLOCK.RELEASE k o\r\nFENCE.CHECK r 5\r\n",
		"LOCK.ACQUIRE k o 1000 WAIT 50\r\nLOCK.ACQUIRE k p 1000 WAIT 50\r\n",
		"SUBSCRIBE a b\r\nPSUBSCRIBE c*\r\nPING\r\nUNSUBSCRIBE\r\nQUIT\r\n",
		"ZADD z 1 a 2 b\r\nZRANGE z 0 -1 WITHSCORES\r\nRPUSH l x y\r\nLRANGE l 0 -1\r\n",
		"SENTINEL get-master-addr-by-name x\r\nINFO\r\nCLIENT SETNAME n\r\nCONFIG GET maxmemory\r\n",
		"*-1\r\n*1\r\n$-5\r\n",
		"*99999999999\r\n",
		"$5\r\nhello\r\n",
		"\"unbalanced\r\n",
		"*2\r\n$3\r\nGET\r\n$100\r\nshort\r\n",
	} {
		f.Add([]byte(s))
	}
	s, _ := testServer(f, Config{Logger: hclog.NewNullLogger(), IdleTimeout: 5 * time.Second})
	fuzzServer(f, s.Addr())
}

// FuzzClusterConn is FuzzConn against a follower in cluster mode
// (Config.Cluster): CLUSTER's subcommands, COMMAND GETKEYS, CROSSSLOT and
// MOVED on arbitrary input.
func FuzzClusterConn(f *testing.F) {
	for _, s := range []string{
		"CLUSTER SLOTS\r\nCLUSTER SHARDS\r\nCLUSTER NODES\r\nCLUSTER INFO\r\nCLUSTER MYID\r\n",
		"CLUSTER KEYSLOT {a}b\r\nCLUSTER KEYSLOT\r\nCLUSTER COUNTKEYSINSLOT 5\r\nCLUSTER GETKEYSINSLOT 5 -1\r\n",
		"CLUSTER GETKEYSINSLOT 99999999999999999999 1\r\nCLUSTER ADDSLOTS 1\r\nASKING\r\nREADONLY\r\nGET k\r\nREADWRITE\r\n",
		"MSET a 1 b 2\r\nMULTI\r\nSET x 1\r\nSET y 1\r\nEXEC\r\nEVAL \"return 1\" 2 x y\r\n",
		"COMMAND\r\nCOMMAND INFO get nosuch\r\nCOMMAND GETKEYS MSET a 1 b\r\nCOMMAND GETKEYS\r\nCOMMAND GETKEYS EVAL x -1\r\n",
	} {
		f.Add([]byte(s))
	}
	b := &leaderBackend{fakeBackend: newFakeBackend(f), leader: "n1", term: 3}
	members := func() []Member {
		return []Member{{ID: "n1", RESP: "10.0.0.1:6379", Reachable: true}, {ID: "n2", Reachable: true}}
	}
	s := testServerOn(f, b, Config{Logger: hclog.NewNullLogger(), IdleTimeout: 5 * time.Second,
		NodeID: "n2", Cluster: true, Members: members})
	fuzzServer(f, s.Addr())
}

// fuzzServer sends each input on a fresh connection, then checks that
// the server still answers PING on another.
func fuzzServer(f *testing.F, addr string) {
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write(in); err != nil {
			return // the server may close a connection on a protocol error
		}
		_ = c.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, c) // until the server closes, or the deadline

		// The server still serves a fresh connection.
		p, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("server gone after %q: %v", in, err)
		}
		defer p.Close()
		_ = p.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := p.Write([]byte("PING\r\n")); err != nil {
			t.Fatalf("ping after %q: %v", in, err)
		}
		line, err := bufio.NewReader(p).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "+PONG" {
			t.Fatalf("ping after %q = %q, %v", in, line, err)
		}
	})
}
