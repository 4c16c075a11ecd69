//go:build !lattrace

package raft

// TraceOn is true in builds with the lattrace tag (see trace.go).
const TraceOn = false

// TraceMark records that entry idx reached stage now (lattrace builds only).
func TraceMark(TraceStage, uint64) {}

// TraceMarkAt records that entry idx reached stage at t, Unix nanoseconds
// (lattrace builds only).
func TraceMarkAt(TraceStage, uint64, int64) {}
