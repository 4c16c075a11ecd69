package fsm

import "testing"

// Differential cases for the sandbox and string.format against the real
// redis-server (see redis_diff_test.go): error texts of refused writes,
// and Lua 5.1 formatting, which gopher-lua's own string.format (Go's
// fmt.Sprintf) gets wrong.
func TestLuaDifferential(t *testing.T) {
	rc := startRedis(t)
	var steps []dstep
	for _, s := range []string{
		`return string.format("%s %d", 1.5, 3)`,
		`return string.format("%5.2s|%-3c|%+d|% d|%05d|%#x|%#o|%.3d", "abc", 65, 5, 5, 42, 255, 8, 7)`,
		`return string.format("%10.4f|%-10.2e|%G|%.3g|%#g|%g", 3.14159265, 12345.678, 1e-10, 2/3, 1, 3.14159265)`,
		`return string.format("%u|%x|%d|%d", -1, -1, 2^63, 3.7)`,
		`return string.format("%s|%s|%s", 1e100, 123456789012345678, 0.1)`,
		`return string.format("%q", "a\nb\"\0\r\t\\")`,
		`return string.format("%%s %s|%d", "a", "12")`,
		`return string.format("%f|%5.1f|%-6f|", 0/0, 1/0, -1/0)`,
		`return string.format("%c%c", 200, 256 + 65)`,
		`return string.format("%.20f|%x", 0.1, 3.9)`,
		`return string.format("%s", string.rep("x", 120))`,
		`return string.format(12)`,
		`return string.format("%-+ #0d", 1)`,
		`return string.format("%s", {})`,
		`return string.format("%s", setmetatable({}, {__tostring = function() return "x" end}))`,
		`return string.format("%s", nil)`,
		`return string.format("%s", true)`,
		`return string.format("%s")`,
		`return string.format("%s %s", "a")`,
		`return string.format()`,
		`return string.format("%z", 1)`,
		`return string.format("%123d", 1)`,
		`return string.format("%-+ #0-d", 1)`,
		`return string.format("%d", "x")`,
		`string.x = 1`,
		`string.len = nil`,
		`math.x = 1`,
		`redis.call = nil`,
		`getmetatable("").__index = {}`,
		`getmetatable("").__index.upper = nil`,
		`rawset(string, "x", 1)`,
		`table.insert(string, 1)`,
		`setmetatable(string, {})`,
		`setmetatable(_G, {})`,
		`setmetatable(1, {})`,
		`KEYS = 1`,
		`return table.sort(math)`,
		`return table.remove(string)`,
		`return rawget(string, "len") ~= nil`,
		`return rawget(_G, "KEYS") ~= nil`,
		`return getmetatable("").__index == string`,
		`return tostring(getmetatable(string))`,
		`local n = 0 for k in pairs(string) do n = n + 1 end return n`,
		`local t = setmetatable({}, {__index = string}) return t.len("ab")`,
	} {
		steps = append(steps, ev(s, nil))
	}
	runDiff(t, rc, diffCase{name: "sandbox and format", steps: steps})
}
