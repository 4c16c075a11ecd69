package fsm

import (
	"strconv"
	"testing"
)

// Compare-and-delete as a Redlock client drives it: Apply of SET NX PX,
// then Apply of EVAL compare-and-delete. Native: the script is a hot one;
// Lua: the same script with a comment appended, so it runs in the VM.
func benchCAD(b *testing.B, script string) {
	t := New(DefaultConfig())
	set := &Command{Op: OpRedis, Args: bargs("SET", "lock", "", "NX", "PX", "30000")}
	ev := &Command{Op: OpEval, Script: []byte(script), KeysB: bargs("lock"), Args: [][]byte{nil}}
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := []byte("token-" + strconv.Itoa(i))
		set.Args[2], ev.Args[0] = tok, tok
		index++
		set.Time = int64(index)
		if r := t.Apply(index, set); r.Reply.Kind != 0 && r.Reply.Str != "OK" {
			b.Fatalf("SET NX: %+v", r.Reply)
		}
		index++
		ev.Time = int64(index)
		if r := t.Apply(index, ev); r.Reply.Int != 1 {
			b.Fatalf("CAD: %+v", r.Reply)
		}
	}
}

func BenchmarkCADNative(b *testing.B) { benchCAD(b, hotText(famCAD)) }
func BenchmarkCADLua(b *testing.B)    { benchCAD(b, hotText(famCAD)+"\n-- run in Lua") }
