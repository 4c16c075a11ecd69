package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// hashRenewRT is a table at cluster version v with keyspace events on.
// steps bounds a Lua run (0: the default), so a test can tell the native
// path from the Lua one: the Lua text does not fit one step.
func hashRenewRT(t *testing.T, v uint32, steps int) *rt {
	t.Helper()
	cfg := DefaultConfig()
	if steps > 0 {
		cfg.MaxScriptSteps = steps
	}
	r := newRTConfig(t, cfg)
	r.t.SetKeyspaceEvents(true)
	if res := r.apply(&Command{Op: OpSetVersion, Token: uint64(v)}); res.Err != nil {
		t.Fatalf("set version %d: %v", v, res.Err)
	}
	return r
}

// renderEvents renders every event of an entry, in order.
func renderEvents(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%d:%s:%s:%s:%d ", e.Kind, e.Key, e.Message, e.Owner, e.Deadline)
	}
	return b.String()
}

// The native Redisson renewal answers, changes and emits exactly what
// its Lua text does, in every case the text can meet: EVAL and EVALSHA,
// a Redisson lock's hash, a plain hash, a missing key or field, keys of
// other kinds, bad and overlarge TTLs, missing KEYS or ARGV.
func TestHashRenewNativeMatchesLua(t *testing.T) {
	native := redissonRenewText
	lua := native + " -- not hot"
	if classify([]byte(native)) != famHashRenew || classify([]byte(lua)) != famNone {
		t.Fatal("classification")
	}
	// Redisson's own spelling over lines (lockbench's before) is the same
	// family by its normalised text.
	if classify([]byte(strings.ReplaceAll(native, "; ", ";\n  "))) != famHashRenew {
		t.Fatal("a re-indented text is not recognised")
	}
	maxTTL := DefaultConfig().MaxTTL
	setups := map[string][][]string{
		"missing":       nil,
		"redisson lock": {{"EVAL", scriptHashAcquire, "1", "k", "30000", "owner"}},
		"reentered":     {{"EVAL", scriptHashAcquire, "1", "k", "30000", "owner"}, {"EVAL", scriptHashAcquire, "1", "k", "30000", "owner"}},
		"plain hash":    {{"HSET", "k", "owner", "x", "f", "y"}},
		"other owner":   {{"HSET", "k", "someone", "1"}, {"PEXPIRE", "k", "5000"}},
		"expired hash":  {{"HSET", "k", "owner", "1"}, {"PEXPIRE", "k", "1"}, {"ADVANCE", "5"}},
		"string":        {{"SET", "k", "owner"}},
		"redis lock":    {{"SET", "k", "owner", "NX", "PX", "5000"}},
		"set":           {{"SADD", "k", "owner"}},
	}
	argss := [][]string{
		{"30000", "owner"},
		{"30000", "other"},
		{"0", "owner"},
		{"-5", "owner"},
		{"x", "owner"},
		{"x", "other"},
		{"1.5", "owner"},
		{fmt.Sprint(maxTTL), "owner"},
		{fmt.Sprint(maxTTL + 1), "owner"},
		{"9223372036854775807", "owner"},
		{"30000", "owner", "extra"},
		{"30000", strings.Repeat("f", 3<<20)},
		{strings.Repeat("1", 3<<20), "owner"},
		{"30000"},
		{},
	}
	for _, version := range []uint32{VersionRedissonRenew - 1, VersionRedissonRenew} {
		for name, setup := range setups {
			for _, args := range argss {
				for _, bySHA := range []bool{false, true} {
					for _, nkeys := range []int{1, 0} {
						var got [2]string
						for i, text := range []string{native, lua} {
							r := hashRenewRT(t, version, 0)
							for _, c := range setup {
								switch c[0] {
								case "ADVANCE":
									var d int64
									fmt.Sscan(c[1], &d)
									r.now += d
								case "EVAL":
									r.eval(c[1], 1, c[3:]...)
								default:
									r.do(c...)
								}
							}
							cmdArgs := append([]string{"k"}, args...)[1-nkeys:]
							b := bargs(cmdArgs...)
							cmd := &Command{Op: OpEval, Script: []byte(text), KeysB: b[:nkeys], Args: b[nkeys:]}
							if bySHA {
								r.load(text)
								cmd = &Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(text)), KeysB: b[:nkeys], Args: b[nkeys:]}
							}
							res := r.apply(cmd)
							rep := strings.Split(fmtReply(res.Reply), " script: ")[0]
							got[i] = fmt.Sprintf("reply %s err %v events [%s] type %s hash %s pttl %s",
								rep, res.Err, renderEvents(res.Events), fmtReply(r.do("TYPE", "k")),
								fmtReply(r.do("HGETALL", "k")), fmtReply(r.do("PTTL", "k")))
						}
						if got[0] != got[1] {
							t.Errorf("version %d, %s, args %q, evalsha %v, %d keys:\nnative %s\nlua    %s",
								version, name, args, bySHA, nkeys, got[0], got[1])
						}
					}
				}
			}
		}
	}
}

// The native path runs from VersionRedissonRenew on, the Lua text before
// it: with a Lua step budget too small for the text, only the native path
// renews. The classification kept in the engine's cache does not carry
// the version: the same table runs Lua, then natively once the version is
// raised.
func TestHashRenewNativeGated(t *testing.T) {
	r := hashRenewRT(t, VersionRedissonRenew-1, 1)
	r.eval(scriptHashAcquire, 1, "k", "30000", "owner") // fails its budget too
	r.do("HSET", "k", "owner", "1")
	r.do("PEXPIRE", "k", "5000")
	sha := fmtReply(r.load(redissonRenewText))
	sha = strings.Trim(sha, `"`)
	renew := func() reply.Reply { return r.evalsha(sha, false, 1, "k", "30000", "owner") }
	if got := renew(); got.Kind != reply.Error || !strings.Contains(got.Str, "VM steps") {
		t.Fatalf("below version %d: %s, want the Lua run's step budget error", VersionRedissonRenew, fmtReply(got))
	}
	if p := r.do("PTTL", "k"); p.Int != 5000 {
		t.Fatalf("below version %d the failed run renewed: PTTL %s", VersionRedissonRenew, fmtReply(p))
	}
	if renewal, known := r.t.RenewalScript(sha); renewal || !known {
		t.Fatalf("RenewalScript below the version: %v %v", renewal, known)
	}
	r.apply(&Command{Op: OpSetVersion, Token: VersionRedissonRenew})
	if got := renew(); fmtReply(got) != ":1" {
		t.Fatalf("at version %d: %s, want :1 (native)", VersionRedissonRenew, fmtReply(got))
	}
	if p := r.do("PTTL", "k"); p.Int != 30000 {
		t.Fatalf("native renewal: PTTL %s", fmtReply(p))
	}
	if renewal, known := r.t.RenewalScript(sha); !renewal || !known {
		t.Fatalf("RenewalScript at the version: %v %v", renewal, known)
	}
}

// What a proposer batches: Redisson's exact text from VersionRedissonRenew
// on, never before; and an entry applied below it refuses that renewal
// alone (as a binary without the family does) while renewing the rest.
func TestHashRenewBatched(t *testing.T) {
	sha := ScriptSHA([]byte(redissonRenewText))
	if RenewalSHA(sha, VersionRedissonRenew-1) || !RenewalSHA(sha, VersionRedissonRenew) || !RenewalSHA(strings.ToUpper(sha), MaxClusterVersion) {
		t.Fatal("RenewalSHA of Redisson's renewal")
	}
	if RenewalSHA(ScriptSHA([]byte(scriptHashRenew)), MaxClusterVersion) {
		t.Fatal("RenewalSHA of a re-spelt text: proposed alone")
	}
	for _, version := range []uint32{VersionRedissonRenew - 1, VersionRedissonRenew} {
		r := hashRenewRT(t, version, 0)
		for _, k := range []string{"h1", "h2"} {
			r.eval(scriptHashAcquire, 1, k, "10000", "owner")
		}
		r.do("SET", "s", "tok", "NX", "PX", "10000")
		r.load(redissonRenewText)
		cape := hotText(famCAPE)
		r.load(cape)
		renew := func(k, field string) *Command {
			return &Command{Op: OpEvalSHA, Key: sha, KeysB: bargs(k), Args: bargs("30000", field)}
		}
		res := r.apply(batchOf(
			renew("h1", "owner"),
			renew("h2", "other"),
			&Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(cape)), KeysB: bargs("s"), Args: bargs("tok", "30000")},
		))
		if res.Err != nil || len(res.Batch) != 3 {
			t.Fatalf("version %d: batch %+v", version, res)
		}
		b := res.Batch
		if b[2].Err != nil || b[2].Reply.Int != 1 {
			t.Fatalf("version %d: compare-and-pexpire in the batch: %+v", version, b[2])
		}
		pttl := func(k string) int64 { return r.do("PTTL", k).Int }
		if version < VersionRedissonRenew {
			if !errors.Is(b[0].Err, ErrBadCommand) || !errors.Is(b[1].Err, ErrBadCommand) {
				t.Fatalf("version %d: Redisson renewals in a batch: %+v %+v, want refused", version, b[0], b[1])
			}
			if pttl("h1") != 10000 {
				t.Fatalf("version %d: refused renewal renewed h1: %d", version, pttl("h1"))
			}
			continue
		}
		if b[0].Err != nil || fmtReply(b[0].Reply) != ":1" || b[1].Err != nil || fmtReply(b[1].Reply) != ":0" {
			t.Fatalf("batched Redisson renewals: %+v %+v", b[0], b[1])
		}
		if keyspaceEvents(b[0]) != "expire:h1" || keyspaceEvents(b[1]) != "" {
			t.Fatalf("batched renewals' events: %q %q", keyspaceEvents(b[0]), keyspaceEvents(b[1]))
		}
		if pttl("h1") != 30000 || pttl("h2") != 10000 || pttl("s") != 30000 {
			t.Fatalf("after the batch: h1 %d h2 %d s %d", pttl("h1"), pttl("h2"), pttl("s"))
		}
	}
}
