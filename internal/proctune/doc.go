// Package proctune plans and applies the process-wide runtime settings a
// node process runs with: the Go soft memory limit (from a flag,
// GOMEMLIMIT or the cgroup's memory limit), the GC target (a fixed
// percentage, or "auto", which tunes it to the live heap) and GOMAXPROCS.
// Each is planned first from the flag value and the environment, so a bad
// value is refused before anything changes, then applied and logged.
// Only cmd/locknode uses it: a library that embeds a node (package
// server) leaves the process's settings to the program around it.
package proctune
