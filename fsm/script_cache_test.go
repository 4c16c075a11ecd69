package fsm

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

func newRTConfig(tb testing.TB, cfg Config) *rt {
	return &rt{tb: tb, t: New(cfg), now: 1_000_000}
}

func (r *rt) load(script string) reply.Reply {
	return r.apply(&Command{Op: OpScriptLoad, Script: []byte(script)}).Reply
}

func (r *rt) evalsha(sha string, ro bool, nkeys int, args ...string) reply.Reply {
	b := bargs(args...)
	return r.apply(&Command{Op: OpEvalSHA, Key: sha, ReadOnly: ro, KeysB: b[:nkeys], Args: b[nkeys:]}).Reply
}

func (r *rt) exists(scripts ...string) string {
	shas := make([]string, len(scripts))
	for i, s := range scripts {
		shas[i] = ScriptSHA([]byte(s))
	}
	return fmt.Sprint(r.t.ScriptSHAs(shas))
}

// TestScriptCacheRules: the cache's rules (script_cache.go), step by step
// on a cache of 3 EVAL scripts and 2 loaded ones.
func TestScriptCacheRules(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxEvalScripts, cfg.MaxLoadedScripts = 3, 2
	e1, e2, e3, e4 := "return 1", "return 2", "return 3", "return 4"
	l1, l2, l3 := "return 'l1'", "return 'l2'", "return 'l3'"
	tests := []struct {
		name string
		run  func(r *rt) string
		want string
	}{
		{"EVAL caches, least recently used evicted", func(r *rt) string {
			for _, s := range []string{e1, e2, e3, e4} {
				r.eval(s, 0)
			}
			return r.exists(e1, e2, e3, e4)
		}, "[false true true true]"},
		{"EVALSHA makes a script recently used", func(r *rt) string {
			r.eval(e1, 0)
			r.eval(e2, 0)
			r.eval(e3, 0)
			r.evalsha(ScriptSHA([]byte(e1)), false, 0)
			r.eval(e4, 0)
			return r.exists(e1, e2, e3, e4)
		}, "[true false true true]"},
		{"EVAL of a cached script makes it recently used", func(r *rt) string {
			r.eval(e1, 0)
			r.eval(e2, 0)
			r.eval(e3, 0)
			r.eval(e1, 0)
			r.eval(e4, 0)
			return r.exists(e1, e2, e3, e4)
		}, "[true false true true]"},
		{"EVALSHA of an evicted script answers NOSCRIPT", func(r *rt) string {
			for _, s := range []string{e1, e2, e3, e4} {
				r.eval(s, 0)
			}
			return fmtReply(r.evalsha(ScriptSHA([]byte(e1)), false, 0)) + " " +
				fmtReply(r.evalsha(strings.ToUpper(ScriptSHA([]byte(e4))), false, 0))
		}, "-NOSCRIPT No matching script. Please use EVAL. :4"},
		{"EVALSHA of no SHA1 answers NOSCRIPT", func(r *rt) string {
			r.load(l1)
			return fmtReply(r.evalsha("", false, 0)) + " " + fmtReply(r.evalsha(strings.Repeat("\xff", 1<<16), true, 0))
		}, "-NOSCRIPT No matching script. Please use EVAL. -NOSCRIPT No matching script. Please use EVAL."},
		{"a loaded script is never evicted by EVAL", func(r *rt) string {
			r.load(l1)
			for i := range 100 {
				r.eval("return "+strconv.Itoa(i+10), 0)
			}
			return r.exists(l1) + " " + fmtReply(r.evalsha(ScriptSHA([]byte(l1)), false, 0))
		}, `[true] "l1"`},
		{"SCRIPT LOAD of an EVAL-cached script promotes it", func(r *rt) string {
			r.eval(e1, 0)
			r.load(e1)
			for _, s := range []string{e2, e3, e4, "return 5"} {
				r.eval(s, 0)
			}
			return r.exists(e1, e2) + fmt.Sprintf(" %+v", r.t.ScriptStats())
		}, "[true false] {Loaded:1 LoadedBytes:8 Eval:3 EvalBytes:24}"},
		{"SCRIPT LOAD past MaxLoadedScripts is refused, changing nothing", func(r *rt) string {
			r.load(l1)
			r.load(l2)
			r.eval(l3, 0)
			full := fmtReply(r.load(l3))
			again := fmtReply(r.load(l1))
			return full + " " + again + " " + r.exists(l1, l2, l3)
		}, `-` + errScriptsFull + ` "` + ScriptSHA([]byte(l1)) + `" [true true true]`},
		{"SCRIPT FLUSH empties both and frees the loaded bound", func(r *rt) string {
			r.load(l1)
			r.load(l2)
			r.eval(e1, 0)
			flush := fmtReply(r.apply(&Command{Op: OpScriptFlush}).Reply)
			gone := r.exists(l1, l2, e1) + " " + fmtReply(r.evalsha(ScriptSHA([]byte(l1)), false, 0))
			return flush + " " + gone + " " + fmtReply(r.load(l3))
		}, `+OK [false false false] -NOSCRIPT No matching script. Please use EVAL. "` + ScriptSHA([]byte(l3)) + `"`},
		{"a script that does not compile is not cached", func(r *rt) string {
			r.eval("return +", 0)
			return r.exists("return +") + fmt.Sprintf(" %+v", r.t.ScriptStats())
		}, "[false] {Loaded:0 LoadedBytes:0 Eval:0 EvalBytes:0}"},
		{"EVALSHA inside MULTI finds the cache and moves the order", func(r *rt) string {
			r.eval(e1, 0)
			r.eval(e2, 0)
			r.eval(e3, 0)
			ex := r.apply(&Command{Op: OpExec, Multi: [][][]byte{
				bargs("EVALSHA", ScriptSHA([]byte(e1)), "0"),
				bargs("EVALSHA", ScriptSHA([]byte("return 99")), "0"),
			}}).Reply
			r.eval(e4, 0)
			return fmtReply(ex) + " " + r.exists(e1, e2)
		}, "[:1 -NOSCRIPT No matching script. Please use EVAL.] [true false]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run(newRTConfig(t, cfg)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestScriptCacheNeverFills is issue 13: 10,005 distinct EVALs used to
// fill the cache for good. With the default bounds SCRIPT LOAD and
// EVALSHA still work after them, the loaded script survives, and the EVAL
// part stays at MaxEvalScripts.
func TestScriptCacheNeverFills(t *testing.T) {
	r := newRT(t)
	kept := r.load(`return 'kept'`).Str
	for i := range 10_005 {
		if got := r.eval("return "+strconv.Itoa(i), 0); got.Kind != reply.Int || got.Int != int64(i) {
			t.Fatalf("EVAL %d = %s", i, fmtReply(got))
		}
	}
	st := r.t.ScriptStats()
	if st.Eval != DefaultConfig().MaxEvalScripts || st.Loaded != 1 {
		t.Fatalf("stats %+v", st)
	}
	sha := r.load(`return 'new'`)
	if sha.Kind != reply.Bulk {
		t.Fatalf("SCRIPT LOAD after the churn = %s", fmtReply(sha))
	}
	for _, s := range []string{kept, sha.Str, ScriptSHA([]byte("return 10004"))} {
		if got := r.evalsha(s, false, 0); got.Kind == reply.Error {
			t.Fatalf("EVALSHA %s = %s", s, fmtReply(got))
		}
	}
	if got := r.evalsha(ScriptSHA([]byte("return 0")), false, 0); got.Str != errNoScript {
		t.Fatalf("EVALSHA of the oldest EVAL = %s", fmtReply(got))
	}
}

// TestEvalReadOnly: EVAL_RO and EVALSHA_RO refuse every write command
// (PUBLISH too) with Redis 7's text, change nothing, and run reads.
func TestEvalReadOnly(t *testing.T) {
	const cad = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	setScript := "return redis.call('set', KEYS[1], 'b')"
	tests := []struct {
		name   string
		script string
		keys   []string
		args   []string
		want   string
	}{
		{"write raises", setScript, []string{"k"}, nil,
			"-ERR Write commands are not allowed from read-only scripts. script: " + ScriptSHA([]byte(setScript)) + ", on @user_script:1."},
		{"pcall returns the error", "return redis.pcall('set', KEYS[1], 'b')", []string{"k"}, nil,
			"-ERR Write commands are not allowed from read-only scripts."},
		{"publish is a write", "return redis.call('publish', 'ch', 'm')", nil, nil,
			"-ERR Write commands are not allowed from read-only scripts. script: " + ScriptSHA([]byte("return redis.call('publish', 'ch', 'm')")) + ", on @user_script:1."},
		{"reads run", "return redis.call('get', KEYS[1])", []string{"k"}, nil, `"v"`},
		{"a native script takes the Lua path", cad, []string{"k"}, []string{"v"},
			"-ERR Write commands are not allowed from read-only scripts. script: " + ScriptSHA([]byte(cad)) + ", on @user_script:1."},
		{"a native script that writes nothing answers", cad, []string{"k"}, []string{"other"}, ":0"},
	}
	for _, tc := range tests {
		for _, bySHA := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s sha=%v", tc.name, bySHA), func(t *testing.T) {
				r := newRT(t)
				r.do("SET", "k", "v")
				b := bargs(append(append([]string(nil), tc.keys...), tc.args...)...)
				cmd := &Command{Op: OpEval, Script: []byte(tc.script), ReadOnly: true, KeysB: b[:len(tc.keys)], Args: b[len(tc.keys):]}
				if bySHA {
					r.load(tc.script)
					cmd = &Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(tc.script)), ReadOnly: true, KeysB: cmd.KeysB, Args: cmd.Args}
				}
				enc, _ := cmd.MarshalBinary() // ReadOnly travels through the log encoding
				r.index++
				got := r.t.ApplyBytes(r.index, enc).Reply
				if fmtReply(got) != tc.want {
					t.Fatalf("got  %s\nwant %s", fmtReply(got), tc.want)
				}
				if st := r.t.ScriptStats(); bySHA && (st.Loaded != 1 || st.Eval != 0) {
					t.Fatalf("EVALSHA_RO changed the script cache: %+v", st)
				}
				if v := fmtReply(r.do("GET", "k")); v != `"v"` {
					t.Fatalf("k = %s after the read-only script", v)
				}
			})
		}
	}
	// Inside MULTI the _RO forms are read-only too.
	r := newRT(t)
	ex := r.apply(&Command{Op: OpExec, Multi: [][][]byte{bargs("EVAL_RO", setScript, "1", "k"), bargs("GET", "k")}}).Reply
	if got := fmtReply(ex); !strings.HasPrefix(got, "[-ERR Write commands are not allowed from read-only scripts.") || !strings.HasSuffix(got, " nil]") {
		t.Fatalf("MULTI EVAL_RO = %s", got)
	}
}

// TestScriptCacheSnapshot: the cache (both parts, and the EVAL part's
// order) survives a snapshot round trip, and two tables that applied the
// same entries write the same bytes.
func TestScriptCacheSnapshot(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxEvalScripts = 4
	build := func() *rt {
		r := newRTConfig(t, cfg)
		r.load("return 'a'")
		r.load("return 'b'")
		for i := range 6 {
			r.eval("return "+strconv.Itoa(i), 0)
		}
		r.evalsha(ScriptSHA([]byte("return 2")), false, 0) // 2 becomes the newest
		return r
	}
	a, b := build(), build()
	sa := snap(t, a.t)
	if !bytes.Equal(sa, snap(t, b.t)) {
		t.Fatal("two tables with the same log write different snapshots")
	}
	if sa[0] != snapVersion {
		t.Fatalf("version %d", sa[0])
	}
	n := New(cfg)
	if err := n.Restore(bytes.NewReader(sa)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa, snap(t, n)) {
		t.Fatal("restored table snapshots differently")
	}
	if !reflect.DeepEqual(n.ScriptStats(), a.t.ScriptStats()) {
		t.Fatalf("stats %+v, want %+v", n.ScriptStats(), a.t.ScriptStats())
	}
	// The order came back: the next EVAL evicts the same script on both.
	r := &rt{tb: t, t: n, index: a.index, now: a.now}
	for _, x := range []*rt{a, r} {
		x.eval("return 'new'", 0)
	}
	if got, want := r.exists("return 3", "return 4", "return 5", "return 2"), a.exists("return 3", "return 4", "return 5", "return 2"); got != want || want != "[false true true true]" {
		t.Fatalf("after restore %s, original %s", got, want)
	}
}

// TestScriptCacheRestoreV2: a format-2 snapshot's scripts (one list, not
// told apart) come back as loaded ones: not evicted, EVALSHA works.
func TestScriptCacheRestoreV2(t *testing.T) {
	r := newRT(t)
	var scripts [][]byte
	for i := range 5 {
		scripts = append(scripts, []byte("return "+strconv.Itoa(i)))
	}
	cur := snap(t, r.t) // empty table: format, cluster version 1, ..., then the two empty script counts and the highest fence, 0
	var v2 bytes.Buffer
	v2.WriteByte(snapVersionV2)
	v2.Write(cur[2 : len(cur)-3])
	v2.WriteByte(byte(len(scripts)))
	for _, s := range scripts {
		v2.WriteByte(byte(len(s)))
		v2.Write(s)
	}
	n := New(DefaultConfig())
	if err := n.Restore(&v2); err != nil {
		t.Fatal(err)
	}
	if st := n.ScriptStats(); st.Loaded != 5 || st.Eval != 0 {
		t.Fatalf("stats %+v", st)
	}
	x := &rt{tb: t, t: n, now: r.now, index: 10}
	for i := range 600 {
		x.eval("return "+strconv.Itoa(1000+i), 0)
	}
	if got := x.evalsha(ScriptSHA(scripts[0]), false, 0); fmtReply(got) != ":0" {
		t.Fatalf("EVALSHA of a v2 script after EVAL churn = %s", fmtReply(got))
	}
}

func TestScriptCacheConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"MaxLoadedScripts", func(c *Config) { c.MaxLoadedScripts = -1 }},
		{"MaxEvalScripts", func(c *Config) { c.MaxEvalScripts = -1 }},
	} {
		c := DefaultConfig()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s negative: %v", tc.name, err)
		}
	}
	if c := New(Config{}).Config(); c.MaxLoadedScripts != 1000 || c.MaxEvalScripts != 500 {
		t.Errorf("defaults %d %d", c.MaxLoadedScripts, c.MaxEvalScripts)
	}
}

// benchCADEntry is a redis-py Lock release as the node applies it: the
// encoded entry decoded and applied (after a SET NX PX), by text (EVAL,
// what the bridge proposed for EVALSHA before OpEvalSHA) or by SHA1.
func benchCADEntry(b *testing.B, bySHA bool) {
	t := New(DefaultConfig())
	text := []byte(hotText(famCAD1))
	var index uint64
	if bySHA {
		index++
		t.Apply(index, &Command{Op: OpScriptLoad, Script: text})
	}
	set := &Command{Op: OpRedis, Args: bargs("SET", "lock", "", "NX", "PX", "30000")}
	ev := &Command{Op: OpEval, Script: text, KeysB: bargs("lock"), Args: [][]byte{nil}}
	if bySHA {
		ev = &Command{Op: OpEvalSHA, Key: ScriptSHA(text), KeysB: bargs("lock"), Args: [][]byte{nil}}
	}
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := []byte("token-" + strconv.Itoa(i))
		set.Args[2], ev.Args[0] = tok, tok
		index++
		set.Time = int64(index)
		t.Apply(index, set)
		index++
		ev.Time = int64(index)
		enc, _ := ev.MarshalBinary()
		size = len(enc)
		if r := t.ApplyBytes(index, enc); r.Reply.Int != 1 {
			b.Fatalf("release: %+v", r.Reply)
		}
	}
	b.ReportMetric(float64(size), "entry-bytes")
}

func BenchmarkReleaseByText(b *testing.B) { benchCADEntry(b, false) }
func BenchmarkReleaseBySHA(b *testing.B)  { benchCADEntry(b, true) }
