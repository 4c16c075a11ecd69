//go:build !locknode_mutants

package cluster

// mutant reports whether the named planted bug is on: never, outside
// builds with -tags locknode_mutants (mutants_on.go), so the compiler
// drops every planted branch.
func mutant(string) bool { return false }
