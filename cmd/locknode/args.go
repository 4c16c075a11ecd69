package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// normalizeArgs keeps command lines written for the standard flag
// package working: a single-dash long flag ("-ttl=5s", "-endpoints X")
// becomes "--ttl=5s", and for commands that run a program (lock NAME
// CMD..., elect NAME VALUE CMD...) a "--" goes before the program when
// the line has none, so the program's own flags stay its own.
func normalizeArgs(root *cobra.Command, args []string) []string {
	if len(args) == 0 {
		return args
	}
	if args[0] == "-version" {
		return append([]string{"--version"}, args[1:]...)
	}
	cmd := findSub(root, args[0])
	if cmd == nil || cmd.DisableFlagParsing {
		return args
	}
	out := []string{args[0]}
	maxPos, pos := -1, 0
	var fs *flag.FlagSet
	enter := func(c *cobra.Command) {
		cmd, maxPos = c, -1
		if n, ok := c.Annotations[annMaxArgs]; ok {
			fmt.Sscan(n, &maxPos)
		}
		fs = flag.NewFlagSet(c.Name(), flag.ContinueOnError)
		fs.AddFlagSet(c.Flags())
		fs.AddFlagSet(c.PersistentFlags())
		fs.AddFlagSet(c.InheritedFlags())
	}
	enter(cmd)
	// takesValue: the flag written as a (without "=") consumes the next
	// argument.
	takesValue := func(name string) bool {
		f := fs.Lookup(name)
		return f != nil && f.NoOptDefVal == ""
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "--"):
			out = append(out, a)
			if name, _, eq := strings.Cut(a[2:], "="); !eq && takesValue(name) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case len(a) > 2 && a[0] == '-':
			name, _, eq := strings.Cut(a[1:], "=")
			if len(name) > 1 && fs.Lookup(name) != nil {
				a = "-" + a
			}
			out = append(out, a)
			if !eq && len(name) > 1 && takesValue(name) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case pos == 0 && cmd.HasSubCommands() && findSub(cmd, a) != nil:
			enter(findSub(cmd, a))
			out = append(out, a)
		case pos == maxPos:
			out = append(out, "--")
			return append(out, args[i:]...)
		default:
			pos++
			out = append(out, a)
		}
	}
	return out
}

// findSub is cmd's subcommand called name, or nil.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}
