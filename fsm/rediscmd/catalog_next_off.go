//go:build !locknode_next

package rediscmd

// nextSpecs are the synthetic next release's commands (catalog_next.go),
// none in a release build.
var nextSpecs []Spec
