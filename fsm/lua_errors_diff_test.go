package fsm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// luaErrorCases are scripts whose errors Redis 7 words in Lua 5.1's terms
// (variable names, "near" tokens) with its own "script: <sha>, on
// @user_script:<line>." suffix; clients and people match on these texts.
var luaErrorCases = readErrorScripts(filepath.Join("luaengine", "testdata", "error_scripts.txt"))

// readErrorScripts reads a file of Go-quoted scripts, one per line; the
// error scripts are shared with luaengine's syntax fuzz seeds.
func readErrorScripts(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		s, err := strconv.Unquote(l)
		if err != nil {
			panic(fmt.Sprintf("%s: %q: %v", path, l, err))
		}
		out = append(out, s)
	}
	return out
}

func TestLuaErrorsDifferential(t *testing.T) {
	rc := startRedis(t)
	var steps []dstep
	for _, s := range luaErrorCases {
		steps = append(steps, ev(s, nil))
	}
	steps = append(steps, c("SET", "k", "notanumber"), ev("return redis.call('incr', KEYS[1])", []string{"k"}),
		ev("redis.call('incr', KEYS[1])\nreturn 1", []string{"k"}))
	runDiff(t, rc, diffCase{name: "error texts", steps: steps})
}
