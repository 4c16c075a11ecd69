package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/luaengine"
)

// luaPolluter tries every way we know for a script to leave state behind
// in its interpreter. Each attempt runs under pcall; the reply lists which
// attempts succeeded (1) and which were refused (false → nil in the
// reply array is avoided by mapping to 0).
const luaPolluter = `
local attempts = {
  function() string.x = 1 end,
  function() string.len = nil end,
  function() math.random = nil end,
  function() math.pi = 3 end,
  function() table.insert = nil end,
  function() redis.call = nil end,
  function() redis.x = 1 end,
  function() rawset(string, 'x', 1) end,
  function() rawset(_G, 'x', 1) end,
  function() rawset(redis, 'call', 1) end,
  function() table.insert(string, 'x') end,
  function() table.insert(_G, 'x') end,
  function() setmetatable(string, {__index = function() return 1 end}) end,
  function() setmetatable(_G, {}) end,
  function() setmetatable('', {__index = {len = function() return 99 end}}) end,
  function() setmetatable(1, {__index = function() return 'leak' end}) end,
  function() getmetatable('').__index = {} end,
  function() getmetatable('').__index.upper = nil end,
  function() getmetatable('').__add = function() return 1 end end,
  function() rawset(getmetatable(''), '__index', {}) end,
  function() rawset(getmetatable('').__index, 'upper', nil) end,
  function() loadstring('x = 1')() end,
  function() x = 1 end,
  function() _G.KEYS = {} end,
  function() local f = loadstring('return 1') setmetatable(_G, nil) end,
}
local out = {}
for i, f in ipairs(attempts) do
  if pcall(f) then out[i] = 1 else out[i] = 0 end
end
-- State that a script may change, but only for itself.
math.randomseed(42)
redis.setresp(3)
KEYS[1] = 'changed'
for i = 1, 10 do tostring({}) end
return out`

// luaProbe reports everything a script can observe of the state the
// previous script might have left.
const luaProbe = `
local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end
local function keys(t) local s = {} for k in pairs(t) do s[#s + 1] = tostring(k) end return table.concat(s, ',') end
return {
  tostring(rawget(string, 'x')), type(string.len), type(math.random), tostring(math.pi),
  type(table.insert), type(redis.call), tostring(redis.x),
  tostring(rawget(_G, 'x')), #string, #_G,
  tostring(pcall(function() return x end)),
  ('abc'):upper(), ('abc'):len(), tostring(getmetatable('').__index == string),
  tostring(getmetatable(string)), tostring(getmetatable(1)),
  tostring(pcall(function() return (1).x end)),
  tostring(pcall(function() return '' + '' end)),
  math.random(1000000), tostring({}), tostring(function() end),
  redis.call('TYPE', 'nokey'), tostring(redis.call('GET', 'nokey')),
  KEYS[1], #ARGV,
  count(string), count(math), count(table), count(redis), count(_G),
  keys(string), keys(math), keys(table), keys(redis), keys(_G),
}`

func TestLuaPooledStateIsolation(t *testing.T) {
	fresh := newRT(t)
	want := fmtReply(fresh.eval(luaProbe, 1, "k"))
	if strings.HasPrefix(want, "-") {
		t.Fatalf("probe failed: %s", want)
	}

	r := newRT(t)
	r.eval(`return 1`, 0)
	// One interpreter built and idle: a later script that builds none
	// ran on it, and it was not dropped.
	pooled := luaengine.Stats{Scripts: 1, Idle: 1, Built: 1}
	if st := r.t.scripts.engine.Stats(); st != pooled {
		t.Fatalf("engine after one script: %+v, want %+v", st, pooled)
	}
	got := fmtReply(r.eval(luaPolluter, 1, "k"))
	// Every write attempt is refused.
	if wantP := "[" + strings.TrimSpace(strings.Repeat(":0 ", 25)) + "]"; got != wantP {
		t.Fatalf("polluter attempts (1 = got through):\n got  %s\n want %s", got, wantP)
	}
	if st := r.t.scripts.engine.Stats(); st.Idle != 1 || st.Built != 1 {
		t.Fatalf("the polluter did not run on the pooled interpreter: %+v", st)
	}
	if got := fmtReply(r.eval(luaProbe, 1, "k")); got != want {
		t.Fatalf("probe after the polluter differs from a fresh table:\n got  %s\n want %s", got, want)
	}
	if st := r.t.scripts.engine.Stats(); st.Idle != 1 || st.Built != 1 {
		t.Fatalf("the probe did not run on the pooled interpreter: %+v", st)
	}

	// Errors of every kind leave nothing behind either.
	cfg := DefaultConfig()
	cfg.MaxScriptSteps = 5000
	e := &rt{tb: t, t: New(cfg), now: 1_000_000}
	for _, s := range []string{
		`error('boom')`,
		`error({err = 'x'})`,
		`while true do end`,
		`local function f() return f() + 1 end return f()`,
		`return string.rep('x', 100000000)`,
		`redis.call('NOPE')`,
		`local t = {} t[1] = t return t`,
		`return string.format('%s', {})`,
	} {
		if got := fmtReply(e.eval(s, 0)); !strings.HasPrefix(got, "-") {
			t.Fatalf("%s: want an error, got %s", s, got)
		}
		if got := fmtReply(e.eval(luaProbe, 1, "k")); got != want {
			t.Fatalf("probe after %q differs from a fresh table:\n got  %s\n want %s", s, got, want)
		}
	}
}

// Two tables fed the same scripts give byte-identical snapshots and
// replies, although one runs them on interpreters another table has
// already used (and tried to pollute) and the other on new ones.
func TestLuaSameScriptsSameSnapshot(t *testing.T) {
	scripts := []struct {
		script string
		keys   []string
		args   []string
	}{
		{luaPolluter, []string{"k"}, nil},
		{`local s = {} for k, v in pairs(string) do s[#s+1] = k end
		  redis.call('SET', KEYS[1], table.concat(s, ','))
		  local m = {} for k in pairs(redis) do m[#m+1] = k end
		  redis.call('SET', KEYS[2], table.concat(m, ','))
		  return redis.call('GET', KEYS[1])`, []string{"libs", "redislib"}, nil},
		{`local t = {} for i = 1, 5 do t[#t+1] = math.random(1000) end
		  redis.call('RPUSH', KEYS[1], unpack(t)) return t`, []string{"rand"}, nil},
		{`redis.call('SET', KEYS[1], tostring({}) .. tostring(redis.call) .. string.format('%5.2f|%q|%x', 1/3, 'a\n', 255))`, []string{"names"}, nil},
		{`redis.call('HSET', KEYS[1], 'f', ARGV[1]) error('after write')`, []string{"h"}, []string{"v"}},
		{`redis.call('INCR', KEYS[1]) while true do end`, []string{"n"}, nil},
		{scriptHashAcquire, []string{"rl"}, []string{"30000", "uuid:1"}},
		{scriptHashAcquire, []string{"rl"}, []string{"30000", "uuid:1"}},
		{scriptHashRelease, []string{"rl", "ch", "rl:latch"}, []string{"0", "30000", "uuid:1", "publish", "5000"}},
	}
	cfg := DefaultConfig()
	cfg.MaxScriptSteps = 20_000
	// c's engine, its interpreters polluted, becomes b's.
	c := &rt{tb: t, t: New(cfg), now: 1_000_000}
	for i := 0; i < 3; i++ {
		c.eval(luaPolluter, 1, "k")
	}
	a := &rt{tb: t, t: New(cfg), now: 1_000_000}
	b := &rt{tb: t, t: New(cfg), now: 1_000_000}
	b.t.scripts.engine = c.t.scripts.engine
	for i, s := range scripts {
		args := append(append([]string{}, s.keys...), s.args...)
		ra := fmtReply(a.eval(s.script, len(s.keys), args...))
		rb := fmtReply(b.eval(s.script, len(s.keys), args...))
		if ra != rb {
			t.Fatalf("script %d: replies differ:\n a %s\n b %s", i, ra, rb)
		}
		a.now += 10
		b.now += 10
	}
	var sa, sb bytes.Buffer
	if err := a.t.Snapshot(&sa); err != nil {
		t.Fatal(err)
	}
	if err := b.t.Snapshot(&sb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		t.Fatalf("snapshots differ (%d vs %d bytes)", sa.Len(), sb.Len())
	}
	if got := fmtReply(a.do("GET", "libs")); !strings.Contains(got, "byte,char") {
		t.Fatalf("string library keys not in sorted order: %s", got)
	}
}
