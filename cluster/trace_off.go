//go:build !lattrace

package cluster

// Commit-path tracing is compiled in only with -tags lattrace (make
// lattrace), which also needs the raft fork's trace marks; without the tag
// these are empty and cluster builds against upstream hashicorp/raft.

// traceOn says whether commit-path tracing is compiled in.
const traceOn = false

func traceStart() int64 { return 0 }

func traceProposed(uint64, int64) {}

func traceFwdServed(uint64, int64, int64) {}

func traceFwdAnswered(uint64) {}

func traceFwdGot(uint64, int64) {}

func traceFwdDone(uint64) {}
