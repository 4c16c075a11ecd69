package main

import (
	"fmt"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/fsm"
)

// scriptLimits are the flags of the FSM's script and MULTI limits. They
// are part of fsm.Config, which every node of a cluster must share: a
// node with other limits could stop a script (or refuse an EXEC) that
// the others ran, and their states would part.
type scriptLimits struct {
	steps, memory, multiCmds, multiBytes *string
}

const sameOnEveryNode = "; must be the same on every node"

func addScriptLimitFlags(fs *flag.FlagSet) *scriptLimits {
	d := fsm.DefaultConfig()
	return &scriptLimits{
		steps: fs.String("max-script-steps", envDefault("LOCKNODE_MAX_SCRIPT_STEPS", strconv.Itoa(d.MaxScriptSteps)),
			"Lua VM steps one EVAL (or all scripts of one EXEC) may run; past it the script fails (and its reply says so)"+sameOnEveryNode),
		memory: fs.String("max-script-memory", envDefault("LOCKNODE_MAX_SCRIPT_MEMORY", fmt.Sprintf("%dMiB", d.MaxScriptMemory>>20)),
			"bytes one EVAL (or all scripts of one EXEC) may allocate, counted deterministically (512KiB, 32MiB); past it the script fails"+sameOnEveryNode),
		multiCmds: fs.String("max-multi-commands", envDefault("LOCKNODE_MAX_MULTI_COMMANDS", strconv.Itoa(d.MaxExecCommands)),
			"commands one MULTI block may queue; past it the command is refused and EXEC answers EXECABORT"+sameOnEveryNode),
		multiBytes: fs.String("max-multi-bytes", envDefault("LOCKNODE_MAX_MULTI_BYTES", fmt.Sprintf("%dMiB", d.MaxExecBytes>>20)),
			"argument bytes one MULTI block may queue (64MiB); past it as --max-multi-commands"+sameOnEveryNode),
	}
}

// apply sets the limits in cfg, refusing values that are not positive.
func (l *scriptLimits) apply(cfg *fsm.Config) error {
	for _, f := range []struct {
		name  string
		v     string
		bytes bool
		dst   *int
	}{
		{"--max-script-steps", *l.steps, false, &cfg.MaxScriptSteps},
		{"--max-script-memory", *l.memory, true, &cfg.MaxScriptMemory},
		{"--max-multi-commands", *l.multiCmds, false, &cfg.MaxExecCommands},
		{"--max-multi-bytes", *l.multiBytes, true, &cfg.MaxExecBytes},
	} {
		n, err := parseCount(f.v, f.bytes)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = n
	}
	return nil
}

// parseCount reads a positive count, with a byte unit when bytes is set
// (the units of --memory-limit).
func parseCount(s string, bytes bool) (int, error) {
	s = strings.TrimSpace(s)
	var v int64
	var err error
	if bytes {
		if v, err = parseBytes(s); err != nil {
			return 0, fmt.Errorf("%q: %w", s, err)
		}
	} else if v, err = strconv.ParseInt(s, 10, 64); err != nil {
		return 0, fmt.Errorf("%q: want a positive whole number", s)
	}
	switch {
	case v <= 0:
		return 0, fmt.Errorf("%q: want a positive whole number", s)
	case v > 1<<31-1:
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int(v), nil
}
