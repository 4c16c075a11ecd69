package luaengine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// fakeHost is a key space of strings behind GET and SET, enough to see
// what the engine hands its host and what it makes of the replies.
type fakeHost struct {
	kv     map[string]string
	calls  []string // each call's arguments, space-joined
	charge int64    // bytes each write charges to the script's budget
}

func (h *fakeHost) Call(mem Budget, args [][]byte) reply.Reply {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = string(a)
	}
	h.calls = append(h.calls, strings.Join(parts, " "))
	switch strings.ToUpper(parts[0]) {
	case "GET":
		if v, ok := h.kv[parts[1]]; ok {
			return reply.NewBulk(v)
		}
		return reply.Null
	case "SET":
		mem.ChargeMem(h.charge)
		h.kv[parts[1]] = parts[2]
		return reply.OK
	case "FAIL":
		return reply.NewError("WRONGTYPE nope")
	}
	return reply.NewError("ERR Unknown Redis command called from script")
}

func fmtR(r reply.Reply) string {
	switch r.Kind {
	case reply.Error:
		return "-" + r.Str
	case reply.Status:
		return "+" + r.Str
	case reply.Int:
		return fmt.Sprintf(":%d", r.Int)
	case reply.Bulk:
		return fmt.Sprintf("%q", r.Str)
	case reply.Array:
		s := make([]string, len(r.Arr))
		for i, e := range r.Arr {
			s[i] = fmtR(e)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return "nil"
}

// TestEngineHost: the engine reaches the key space only through its
// Host, and tells its host whether the script failed (so it can undo
// what the script wrote).
func TestEngineHost(t *testing.T) {
	lim := Limits{MaxSteps: 10_000, MaxMemory: 1 << 20, MaxValueBytes: 1 << 20}
	tests := []struct {
		name   string
		script string
		keys   []string
		args   []string
		charge int64
		want   string
		calls  []string
		failed bool
		kv     string // the fake key space's "k" afterwards
	}{
		{"call and reply", `redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])`,
			[]string{"k"}, []string{"v"}, 0, `"v"`, []string{"SET k v", "GET k"}, false, "v"},
		{"numbers as Redis formats them", `return redis.call('SET', 'k', 1.5, 3, 1e20)`,
			nil, nil, 0, "+OK", []string{"SET k 1.5 3 1e+20"}, false, "1.5"},
		{"nil reply is false", `return redis.call('GET', 'none') == false and 1 or 0`,
			nil, nil, 0, ":1", []string{"GET none"}, false, ""},
		{"host error raised with the caller's line", "redis.call('SET', 'k', 'a')\nredis.call('FAIL')\nreturn 1",
			nil, nil, 0, "-WRONGTYPE nope script: " + SHA([]byte("redis.call('SET', 'k', 'a')\nredis.call('FAIL')\nreturn 1")) + ", on @user_script:2.",
			[]string{"SET k a", "FAIL"}, true, "a"},
		{"pcall catches a host error", `local e = redis.pcall('FAIL') return e.err`,
			nil, nil, 0, `"WRONGTYPE nope"`, []string{"FAIL"}, false, ""},
		{"unknown command from the host", `return redis.pcall('NOPE').err`,
			nil, nil, 0, `"ERR Unknown Redis command called from script"`, []string{"NOPE"}, false, ""},
		{"bad argument never reaches the host", `return redis.pcall('GET', {}).err`,
			nil, nil, 0, `"ERR Lua redis lib command arguments must be strings or integers"`, nil, false, ""},
		{"host charges past the budget", `redis.call('SET', 'k', 'v') return 1`,
			nil, nil, 2 << 20, "-ERR locknode: script memory limit exceeded (1048576 bytes, MaxScriptMemory) script: " + SHA([]byte(`redis.call('SET', 'k', 'v') return 1`)),
			[]string{"SET k v"}, true, ""},
		{"step budget", `while true do end`,
			nil, nil, 0, "-ERR locknode: script exceeded 10000 VM steps (MaxScriptSteps) script: " + SHA([]byte(`while true do end`)),
			nil, true, ""},
	}
	e := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHost{kv: map[string]string{}, charge: tc.charge}
			s, err := e.Compile(SHA([]byte(tc.script)), []byte(tc.script))
			if err != nil {
				t.Fatal(err)
			}
			var used Usage
			r, failed := e.Run(h, s, bytesOf(tc.keys), bytesOf(tc.args), lim, &used)
			if got := fmtR(r); got != tc.want {
				t.Errorf("reply %s, want %s", got, tc.want)
			}
			if failed != tc.failed {
				t.Errorf("failed %v, want %v", failed, tc.failed)
			}
			if strings.Join(h.calls, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("host calls %q, want %q", h.calls, tc.calls)
			}
			if h.kv["k"] != tc.kv {
				t.Errorf("k = %q, want %q", h.kv["k"], tc.kv)
			}
			if used.Steps <= 0 {
				t.Errorf("no steps counted: %+v", used)
			}
		})
	}
}

// TestEngineUsageShared: the scripts of one entry share its budgets, so
// a second script starts where the first left off.
func TestEngineUsageShared(t *testing.T) {
	e := New()
	lim := Limits{MaxSteps: 1000, MaxMemory: 1 << 20, MaxValueBytes: 1 << 20}
	script := []byte(`local n = 0 for i = 1, 100 do n = n + i end return n`)
	s, err := e.Compile(SHA(script), script)
	if err != nil {
		t.Fatal(err)
	}
	var used Usage
	h := &fakeHost{kv: map[string]string{}}
	var runs int
	for {
		r, failed := e.Run(h, s, nil, nil, lim, &used)
		if failed {
			if !strings.Contains(r.Str, "MaxScriptSteps") {
				t.Fatalf("run %d failed with %q, want the step limit", runs, r.Str)
			}
			break
		}
		if fmtR(r) != ":5050" {
			t.Fatalf("run %d: %s", runs, fmtR(r))
		}
		if runs++; runs > 100 {
			t.Fatal("the shared step budget never ran out")
		}
	}
	if runs == 0 || used.Steps < int64(lim.MaxSteps) {
		t.Fatalf("%d runs, %d steps used", runs, used.Steps)
	}
	// Spent: the next script is refused before it starts.
	if _, failed := e.Run(h, s, nil, nil, lim, &used); !failed {
		t.Fatal("a script ran on a spent budget")
	}
}

// TestEngineCompileError: a script that does not compile gives Redis'
// reply text as a *CompileError and is not cached as compiled.
func TestEngineCompileError(t *testing.T) {
	e := New()
	script := []byte("return 1 +")
	_, err := e.Compile(SHA(script), script)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want a *CompileError", err)
	}
	if want := "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"; ce.Text != want {
		t.Fatalf("text %q, want %q", ce.Text, want)
	}
	if _, err := e.Compile(SHA(script), script); err == nil {
		t.Fatal("second compile succeeded")
	}
}

func bytesOf(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
