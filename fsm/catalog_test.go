package fsm

import (
	"fmt"
	"testing"

	"github.com/locknode/locknode/fsm/rediscmd"
)

// TestCatalogueCoversKeySpace: every command the key space executes has a
// catalogue entry flagged KeySpace, with the arity Apply enforces and
// read-only exactly when the table runs it in Read and read-only
// scripts; and every KeySpace entry of the catalogue is a command here.
func TestCatalogueCoversKeySpace(t *testing.T) {
	for name, c := range redisCmds {
		s := rediscmd.Lookup(name)
		if s == nil || s.Flags&rediscmd.KeySpace == 0 {
			t.Errorf("%s: executed by the key space, not in the catalogue as KeySpace", name)
			continue
		}
		if s.Arity != c.arity {
			t.Errorf("%s: catalogue arity %d, the table enforces %d", name, s.Arity, c.arity)
		}
		if s.Writes() == c.ro {
			t.Errorf("%s: catalogue writes=%v, the table's read-only=%v", name, s.Writes(), c.ro)
		}
	}
	for _, name := range rediscmd.KeySpaceNames() {
		if redisCmds[name] == nil {
			t.Errorf("%s: flagged KeySpace in the catalogue, not executed by the key space", name)
		}
	}
}

// TestCommandKeysFromCatalogue: the keys the FSM works out for its
// decisions (undo records, forced-release and declared-key checks) from
// the catalogue are those of the rule it used before the catalogue (one
// key at args[1], all of args[1:] for DEL, UNLINK, EXISTS and MGET, every
// other for MSET and MSETNX, none for TIME, PING and PUBLISH), for every
// command and argument count: a replica built before the catalogue
// decides alike.
func TestCommandKeysFromCatalogue(t *testing.T) {
	oracle := func(name string, args [][]byte) [][]byte {
		switch name {
		case "time", "ping", "publish":
			return nil
		case "del", "unlink", "exists", "mget":
			return args[1:]
		case "mset", "msetnx":
			var keys [][]byte
			for i := 1; i < len(args); i += 2 {
				keys = append(keys, args[i])
			}
			return keys
		}
		if len(args) < 2 {
			return nil
		}
		return args[1:2]
	}
	for name, c := range redisCmds {
		for n := max(c.arity, -c.arity); n <= 9; n++ {
			if c.arity >= 0 && n != c.arity {
				break
			}
			args := make([][]byte, n)
			args[0] = []byte(name)
			for i := 1; i < n; i++ {
				args[i] = []byte(fmt.Sprint("a", i))
			}
			got, want := CommandKeysOf(name, args), oracle(name, args)
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Errorf("%s with %d args: keys %q, want %q", name, n, got, want)
			}
		}
	}
}
