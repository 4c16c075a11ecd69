package luaengine

import (
	"runtime"
	"testing"

	lua "github.com/locknode/locknode/internal/lua"

	"github.com/locknode/locknode/fsm/reply"
)

// TestLuaReplyTables: a status, error or (RESP3) double reply reaches a
// script as a one-field table, the same as in Redis, and costs little:
// redis.call('SET', ...) returns one per call, so a script taking many
// locks allocates one per key. gopher-lua's NewTable presizes 32 array
// slots and a 32-entry map (~3 KB each, 57 % of all the bytes the
// lockbench scale fill allocated); CreateTable(0, 1) sizes it for its
// one field.
func TestLuaReplyTables(t *testing.T) {
	tests := []struct {
		name   string
		resp3  bool
		in     reply.Reply
		field  string
		want   lua.LValue
		maxLen int // most bytes allocated per conversion
	}{
		{"status", false, reply.NewStatus("OK"), "ok", lua.LString("OK"), 1024},
		{"error", false, reply.NewError("ERR no such key"), "err", lua.LString("ERR no such key"), 1024},
		{"double resp3", true, reply.NewDouble(1.5), "double", lua.LNumber(1.5), 1024},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := newLuaVM()
			defer vm.L.Close()
			r := &vm.run
			r.resp3 = tc.resp3
			tb, ok := r.toLua(vm.L, tc.in).(*lua.LTable)
			if !ok {
				t.Fatalf("toLua(%+v) is not a table", tc.in)
			}
			if got := tb.RawGetString(tc.field); got != tc.want {
				t.Errorf("%s = %v, want %v", tc.field, got, tc.want)
			}
			n := 0
			tb.ForEach(func(lua.LValue, lua.LValue) { n++ })
			if n != 1 || tb.Len() != 0 {
				t.Errorf("table has %d fields and length %d, want 1 field and length 0", n, tb.Len())
			}

			const runs = 1000
			keep := make([]lua.LValue, runs) // so nothing is optimised away
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range keep {
				keep[i] = r.toLua(vm.L, tc.in)
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > uint64(tc.maxLen) {
				t.Errorf("%d bytes allocated per conversion, want at most %d", per, tc.maxLen)
			}
			runtime.KeepAlive(keep)
		})
	}
}
