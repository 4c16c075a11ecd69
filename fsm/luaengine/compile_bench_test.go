package luaengine

import (
	"bytes"
	"testing"

	lua "github.com/locknode/locknode/internal/lua"
	"github.com/locknode/locknode/internal/lua/parse"
)

// benchScript is a Redisson-sized lock script (the fair-lock acquire
// shape), the kind a node compiles once per SHA1.
const benchScript = `
while true do
  local firstThreadId2 = redis.call('lindex', KEYS[2], 0)
  if firstThreadId2 == false then break end
  local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2))
  if timeout <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], firstThreadId2)
    redis.call('lpop', KEYS[2])
  else break end
end
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0)
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local keys = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]) end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`

// BenchmarkLuaCompile: what a first EVAL of a script costs to compile,
// with the Lua 5.1 syntax check (check) and without (gopher-lua's parse
// and compile alone).
func BenchmarkLuaCompile(b *testing.B) {
	src := []byte(benchScript)
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if msg := luaSyntaxError(src); msg != "" {
				b.Fatal(msg)
			}
		}
	})
	b.Run("gopher-lua", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			chunk, err := parse.Parse(bytes.NewReader(src), luaChunkName)
			if err != nil {
				b.Fatal(err)
			}
			rewriteFors(chunk)
			if _, err := lua.Compile(chunk, luaChunkName); err != nil {
				b.Fatal(err)
			}
		}
	})
}
