//go:build lattrace

package raft

import (
	"bufio"
	"fmt"
	"os"
	"sync"
	"time"
)

// TraceOn is true in builds with the lattrace tag (see trace.go).
const TraceOn = true

type traceRec struct {
	idx   uint64
	stage TraceStage
	t     int64
}

// traceChunk records are buffered before a write: small enough that a
// benchmark run stopped by a signal leaves most of its records on disk.
const traceChunk = 8192

var (
	tracePath = os.Getenv("LOCKNODE_LATTRACE")
	traceMu   sync.Mutex
	traceBuf  = make([]traceRec, 0, traceChunk)
	traceFile sync.Mutex // serialises the writes of full chunks
)

// TraceMark records that entry idx reached stage now.
func TraceMark(stage TraceStage, idx uint64) {
	if tracePath == "" {
		return
	}
	TraceMarkAt(stage, idx, time.Now().UnixNano())
}

// TraceMarkAt records that entry idx reached stage at t, Unix nanoseconds.
func TraceMarkAt(stage TraceStage, idx uint64, t int64) {
	if tracePath == "" {
		return
	}
	traceMu.Lock()
	traceBuf = append(traceBuf, traceRec{idx, stage, t})
	if len(traceBuf) == cap(traceBuf) {
		full := traceBuf
		traceBuf = make([]traceRec, 0, traceChunk)
		go traceWrite(full) // the file write stays off the traced path
	}
	traceMu.Unlock()
}

// traceWrite appends recs to this process's trace file as "stage index
// unixnano" lines.
func traceWrite(recs []traceRec) {
	traceFile.Lock()
	defer traceFile.Unlock()
	f, err := os.OpenFile(fmt.Sprintf("%s.%d", tracePath, os.Getpid()), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "raft lattrace: %v\n", err)
		return
	}
	w := bufio.NewWriter(f)
	for _, r := range recs {
		fmt.Fprintf(w, "%d %d %d\n", r.stage, r.idx, r.t)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "raft lattrace: %v\n", err)
	}
	f.Close()
}
