package rediscmd

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Key specifications of commands locknode does not serve, copied from
// Redis 7.0.15's COMMAND INFO: they exercise the kinds of specification
// the catalogue's own commands do not use yet (a keyword search, a limit,
// two specifications, a subcommand's index).
var (
	blpop = Spec{Name: "blpop", Arity: -3, Flags: Write | NoScript | Blocking, Categories: CatList,
		Keys: []KeySpec{{Flags: KeyRW | KeyAccess | KeyDelete, Index: 1, LastKey: -2, KeyStep: 1}}}
	xread = Spec{Name: "xread", Arity: -4, Flags: ReadOnly | Blocking, Categories: CatStream,
		Keys: []KeySpec{{Flags: KeyRO | KeyAccess, Keyword: "STREAMS", StartFrom: 1, LastKey: -1, KeyStep: 1, Limit: 2}}}
	zunionstore = Spec{Name: "zunionstore", Arity: -4, Flags: Write | DenyOOM, Categories: CatSortedSet,
		Keys: []KeySpec{
			{Flags: KeyOW | KeyUpdate, Index: 1, KeyStep: 1},
			{Flags: KeyRO | KeyAccess, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1},
		}}
	objectEncoding = Spec{Name: "object|encoding", Arity: 3, Flags: ReadOnly, Categories: CatKeyspace,
		Keys: []KeySpec{{Flags: KeyRO, Index: 2, KeyStep: 1}}}
)

func init() {
	for _, s := range []*Spec{&blpop, &xread, &zunionstore, &objectEncoding} {
		s.legacyRange()
	}
}

func spec(t *testing.T, name string) *Spec {
	t.Helper()
	switch name {
	case "blpop":
		return &blpop
	case "xread":
		return &xread
	case "zunionstore":
		return &zunionstore
	case "object|encoding":
		return &objectEncoding
	}
	s := Lookup(name)
	if s == nil {
		t.Fatalf("%s: not in the catalogue", name)
	}
	return s
}

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestKeyArgs: the keys each specification finds are those Redis' COMMAND
// GETKEYS answers for the same arguments.
func TestKeyArgs(t *testing.T) {
	for _, tc := range []struct {
		spec, args string
		want       string // keys, space-separated; "" none
	}{
		{"get", "GET k", "k"},
		{"set", "SET k v NX PX 1000", "k"},
		{"set", "SET k v GET", "k"},
		{"mset", "MSET a 1 b 2 c 3", "a b c"},
		{"msetnx", "MSETNX a 1", "a"},
		{"del", "DEL a b c", "a b c"},
		{"del", "DEL a", "a"},
		{"mget", "MGET a b", "a b"},
		{"exists", "EXISTS a a", "a a"},
		{"hset", "HSET h f v f2 v2", "h"},
		{"watch", "WATCH a b", "a b"},
		{"eval", "EVAL s 2 k1 k2 a1", "k1 k2"},
		{"eval", "EVAL s 0 a1 a2", ""},
		{"eval", "EVAL s 3 k1 k2", ""}, // more keys than arguments: the command refuses it
		{"eval", "EVAL s -1 k1", ""},   // a negative count
		{"eval", "EVAL s x k1", ""},    // not a number
		{"evalsha", "EVALSHA 0123 1 k a", "k"},
		{"eval_ro", "EVAL_RO s 1 k", "k"},
		{"evalsha_ro", "EVALSHA_RO s 2 k1 k2", "k1 k2"},
		{"lock.acquire", "LOCK.ACQUIRE k owner 1000", "k"},
		{"ping", "PING", ""},
		{"publish", "PUBLISH ch m", ""},
		{"time", "TIME", ""},
		{"blpop", "BLPOP a b 0", "a b"},
		{"blpop", "BLPOP a 0", "a"},
		{"xread", "XREAD COUNT 2 STREAMS s1 s2 0 0", "s1 s2"},
		{"xread", "XREAD STREAMS s1 $", "s1"},
		{"xread", "XREAD STREAMS streams streams 0 0", "streams streams"},
		{"xread", "XREAD COUNT 2", ""}, // no STREAMS: no keys (the command refuses it)
		{"zunionstore", "ZUNIONSTORE dst 2 a b WEIGHTS 1 2", "dst a b"},
		{"zunionstore", "ZUNIONSTORE dst 1 a", "dst a"},
		{"zunionstore", "ZUNIONSTORE dst 5 a", ""},
		{"object|encoding", "OBJECT ENCODING k", "k"},
	} {
		got := KeyArgs(spec(t, tc.spec), argv(tc.args))
		if got != tc.want {
			t.Errorf("%s: keys %q, want %q", tc.args, got, tc.want)
		}
	}
}

// KeyArgs renders s.KeyArgs(args) for the test.
func KeyArgs(s *Spec, args [][]byte) string {
	var ks []string
	for _, k := range s.KeyArgs(args) {
		ks = append(ks, string(k))
	}
	return strings.Join(ks, " ")
}

// TestKeyRange: COMMAND's first key, last key and step and the
// movablekeys flag, as Redis 7.0.15 lists them.
func TestKeyRange(t *testing.T) {
	for _, tc := range []struct {
		spec              string
		first, last, step int
		movable           bool
	}{
		{"get", 1, 1, 1, false},
		{"set", 1, 1, 1, false},
		{"mset", 1, -1, 2, false},
		{"del", 1, -1, 1, false},
		{"watch", 1, -1, 1, false},
		{"eval", 0, 0, 0, true},
		{"evalsha_ro", 0, 0, 0, true},
		{"ping", 0, 0, 0, false},
		{"lock.acquire", 1, 1, 1, false},
		{"blpop", 1, -2, 1, false},
		{"xread", 0, 0, 0, true},
		{"zunionstore", 1, 1, 1, true},
		{"object|encoding", 2, 2, 1, false},
	} {
		s := spec(t, tc.spec)
		f, l, st := s.KeyRange()
		if f != tc.first || l != tc.last || st != tc.step || s.Movable() != tc.movable {
			t.Errorf("%s: range %d %d %d movable %v, want %d %d %d %v", tc.spec, f, l, st, s.Movable(), tc.first, tc.last, tc.step, tc.movable)
		}
	}
}

// TestFlagsAndCategories: the flags and ACL categories as COMMAND lists
// them, in Redis' order, with the categories flags imply.
func TestFlagsAndCategories(t *testing.T) {
	for _, tc := range []struct {
		spec, flags, cats string
	}{
		{"get", "readonly fast", "@read @string @fast"},
		{"set", "write denyoom", "@write @string @slow"},
		{"del", "write", "@keyspace @write @slow"},
		{"eval", "noscript stale skip_monitor no_mandatory_keys movablekeys", "@slow @scripting"},
		{"eval_ro", "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", "@slow @scripting"},
		{"hello", "noscript loading stale fast no_auth allow_busy", "@fast @connection"},
		{"role", "noscript loading stale fast", "@admin @fast @dangerous"},
		{"publish", "pubsub loading stale fast", "@pubsub @fast"},
		{"client", "", "@slow"},
		{"blpop", "write noscript blocking", "@write @list @slow @blocking"},
		{"xread", "readonly blocking movablekeys", "@read @stream @slow @blocking"},
	} {
		s := spec(t, tc.spec)
		if got := strings.Join(s.FlagNames(), " "); got != tc.flags {
			t.Errorf("%s: flags %q, want %q", tc.spec, got, tc.flags)
		}
		if got := strings.Join(s.CategoryNames(), " "); got != tc.cats {
			t.Errorf("%s: categories %q, want %q", tc.spec, got, tc.cats)
		}
	}
}

// TestChannelArgs: the channels of the pub/sub commands.
func TestChannelArgs(t *testing.T) {
	for _, tc := range []struct {
		args, want string
		patterns   bool
	}{
		{"SUBSCRIBE a b", "a b", false},
		{"PSUBSCRIBE a* b?", "a* b?", true},
		{"PUBLISH ch msg", "ch", false},
		{"UNSUBSCRIBE a", "", false},
		{"GET k", "", false},
	} {
		args := argv(tc.args)
		s := LookupBytes(args[0])
		var got []string
		for _, c := range s.ChannelArgs(args) {
			got = append(got, string(c))
		}
		if strings.Join(got, " ") != tc.want || s.Channels.Patterns != tc.patterns {
			t.Errorf("%s: channels %q patterns %v, want %q %v", tc.args, got, s.Channels.Patterns, tc.want, tc.patterns)
		}
	}
}

// TestHostileArguments: any argument list, of any length and content,
// finds keys and channels among its own arguments and never panics.
func TestHostileArguments(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	words := []string{"0", "1", "2", "-1", "99999999999999999999", "x", "STREAMS", "streams", "", "3"}
	specs := append(All(), &blpop, &xread, &zunionstore, &objectEncoding)
	for range 200 {
		for _, s := range specs {
			args := make([][]byte, r.IntN(9))
			for i := range args {
				args[i] = []byte(words[r.IntN(len(words))])
			}
			for _, k := range s.KeyArgs(args) {
				if !within(k, args[1:]) {
					t.Fatalf("%s %q: key %q is not an argument", s.Name, args, k)
				}
			}
			for _, c := range s.ChannelArgs(args) {
				if !within(c, args[1:]) {
					t.Fatalf("%s %q: channel %q is not an argument", s.Name, args, c)
				}
			}
		}
	}
}

func within(a []byte, args [][]byte) bool {
	for _, b := range args {
		if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
			return true
		}
	}
	return false
}

// TestCatalogueWellFormed: names are lower case and unique; Perm agrees
// with the flags; a command that writes asks for write permission.
func TestCatalogueWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if s.Name != strings.ToLower(s.Name) || len(s.Name) > maxName || seen[s.Name] {
			t.Errorf("%q: name not lower case, too long or twice", s.Name)
		}
		seen[s.Name] = true
		if s.Arity == 0 {
			t.Errorf("%s: no arity", s.Name)
		}
		if s.Flags&Write != 0 && s.Perm < PermWrite {
			t.Errorf("%s writes but needs %d", s.Name, s.Perm)
		}
		if s.Flags&ReadOnly != 0 && s.Perm != PermRead {
			t.Errorf("%s is read-only but needs %d", s.Name, s.Perm)
		}
		if s.Flags&Write != 0 && s.Flags&ReadOnly != 0 {
			t.Errorf("%s: both write and readonly", s.Name)
		}
		if LookupBytes([]byte(strings.ToUpper(s.Name))) != s {
			t.Errorf("%s: LookupBytes of the upper-case name", s.Name)
		}
	}
	if len(seen) < 90 {
		t.Errorf("only %d commands", len(seen))
	}
	if LookupBytes([]byte(strings.Repeat("a", 100))) != nil || Lookup("nosuch") != nil {
		t.Error("an unknown name resolves")
	}
	if n := testing.AllocsPerRun(100, func() { LookupBytes([]byte("GET")) }); n != 0 {
		t.Errorf("LookupBytes allocates %v times", n)
	}
	args := argv("DEL a b c")
	if n := testing.AllocsPerRun(100, func() { Lookup("del").KeyArgs(args) }); n != 0 {
		t.Errorf("KeyArgs of DEL allocates %v times", n)
	}
}
