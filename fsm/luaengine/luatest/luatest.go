// Package luatest holds test data shared by the Lua engine's tests and
// fsm's: scripts whose errors Redis 7 words in Lua 5.1's terms. Only
// tests import it.
package luatest

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed error_scripts.txt
var errorScripts string

// ErrorScripts returns the error scripts of error_scripts.txt, a file of
// Go-quoted scripts, one per line ('#' starts a comment line). It panics
// on a line that does not unquote: the file is part of the source.
func ErrorScripts() []string {
	var out []string
	for _, l := range strings.Split(errorScripts, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		s, err := strconv.Unquote(l)
		if err != nil {
			panic(fmt.Sprintf("luatest: error_scripts.txt: %q: %v", l, err))
		}
		out = append(out, s)
	}
	return out
}
