//go:build locknode_mutants

package cluster

import "sync/atomic"

// Planted bugs for the simulator's mutation check (package sim,
// make sim-mutants): with -tags locknode_mutants, SetMutant turns one on
// so that the checkers can show they find it. Never in a release build.
var activeMutant atomic.Pointer[string]

// SetMutant turns on the named planted bug ("" for none). Only in builds
// with -tags locknode_mutants.
func SetMutant(name string) { activeMutant.Store(&name) }

// mutant reports whether the named planted bug is on.
func mutant(name string) bool {
	p := activeMutant.Load()
	return p != nil && *p == name
}
