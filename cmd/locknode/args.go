package main

import (
	"flag"
	"strings"
)

// interspersed splits a command line whose flags may come before and
// after its positional arguments, so "lock --ttl 5s NAME --wait 1m -- cmd"
// and "lock NAME --ttl 5s -- cmd" mean the same. The standard flag
// package stops at the first non-flag; pflag would allow interspersed
// flags but not the single-dash long flags ("-ttl") that scripts already
// use.
//
// Scanning stops at "--" (everything after it goes to tail) and, once
// maxPos positional arguments were seen, at the next non-flag: "lock NAME
// cmd -x" keeps -x for cmd. A flag that takes a value consumes the next
// argument unless written as -flag=value. Unknown flags are passed on to
// fs.Parse, which reports them.
func interspersed(fs *flag.FlagSet, args []string, maxPos int) (flags, pos, tail []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, pos, args[i+1:]
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case len(pos) == maxPos:
			return flags, pos, args[i:]
		default:
			pos = append(pos, a)
		}
	}
	return flags, pos, nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
