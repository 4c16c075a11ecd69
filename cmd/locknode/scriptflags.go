package main

import (
	"fmt"
	"strconv"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/fsm"
)

// scriptFlags are the script cache's bounds (fsm.Config), on serve and
// dev. They decide replies (SCRIPT LOAD refused, EVALSHA of an evicted
// script), so every node of a cluster must be given the same values.
type scriptFlags struct {
	loaded, eval *string
}

func addScriptFlags(fs *flag.FlagSet) scriptFlags {
	d := fsm.DefaultConfig()
	return scriptFlags{
		loaded: fs.String("max-loaded-scripts", envDefault("LOCKNODE_MAX_LOADED_SCRIPTS", strconv.Itoa(d.MaxLoadedScripts)),
			"scripts SCRIPT LOAD keeps until SCRIPT FLUSH; past it SCRIPT LOAD is refused (same value on every node)"),
		eval: fs.String("max-eval-scripts", envDefault("LOCKNODE_MAX_EVAL_SCRIPTS", strconv.Itoa(d.MaxEvalScripts)),
			"scripts EVAL caches for EVALSHA; past it the least recently used is evicted (same value on every node)"),
	}
}

// apply parses the flags into c.
func (f scriptFlags) apply(c *fsm.Config) error {
	for _, x := range []struct {
		name string
		val  string
		dst  *int
	}{
		{"max-loaded-scripts", *f.loaded, &c.MaxLoadedScripts},
		{"max-eval-scripts", *f.eval, &c.MaxEvalScripts},
	} {
		n, err := strconv.Atoi(x.val)
		if err != nil || n <= 0 {
			return fmt.Errorf("--%s: want a positive integer, got %q", x.name, x.val)
		}
		*x.dst = n
	}
	return nil
}
