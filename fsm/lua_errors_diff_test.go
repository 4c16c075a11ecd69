package fsm

import (
	"testing"

	"github.com/locknode/locknode/fsm/luaengine/luatest"
)

// luaErrorCases are scripts whose errors Redis 7 words in Lua 5.1's terms
// (variable names, "near" tokens) with its own "script: <sha>, on
// @user_script:<line>." suffix; clients and people match on these texts.
var luaErrorCases = luatest.ErrorScripts()

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
