package httpapi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedReads: a read is shared only by the calls that asked before
// it started; a later call waits for the next read, which the calls
// arriving meanwhile share.
func TestSharedReads(t *testing.T) {
	var g sharedReads[int]
	var reads atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	read := func(ctx context.Context) (int, error) {
		n := int(reads.Add(1))
		started <- struct{}{}
		if n == 1 {
			<-release // the first read runs until the others queued
		}
		return n, ctx.Err()
	}
	k := readKey{key: "k"}
	results := make([]int, 3)
	var wg sync.WaitGroup
	run := func(i int) {
		wg.Add(1)
		// Ends when its do returns.
		go func() {
			defer wg.Done()
			v, err := g.do(t.Context(), k, read)
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		}()
	}
	run(0)
	<-started // the first read runs: the next calls must not share it
	run(1)
	run(2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		queued := g.keys[k] != nil && g.keys[k].next != nil
		g.mu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no next read queued")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	// Calls 1 and 2 may queue one after the other or together; either
	// way neither gets the read that started before it asked.
	if results[0] != 1 || results[1] < 2 || results[2] < 2 {
		t.Fatalf("results %v: a call got a read that started before it asked", results)
	}
	if n := reads.Load(); n > 3 {
		t.Fatalf("%d reads for 3 calls", n)
	}
	g.mu.Lock()
	left := len(g.keys)
	g.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d keys left in the group", left)
	}
}

// TestSharedReadsCancel: a caller whose context ends stops waiting; a
// joiner whose shared read failed with the opener's context error reads
// by itself.
func TestSharedReadsCancel(t *testing.T) {
	var g sharedReads[int]
	k := readKey{key: "k"}
	block := make(chan struct{})
	first := make(chan struct{})
	go func() { // ends when the first read is released
		_, _ = g.do(t.Context(), k, func(context.Context) (int, error) { close(first); <-block; return 1, nil })
	}()
	<-first
	// The opener of the next read, whose client leaves.
	octx, ocancel := context.WithCancel(t.Context())
	openerDone := make(chan error, 1)
	go func() { // ends when its do returns
		_, err := g.do(octx, k, func(ctx context.Context) (int, error) { return 2, ctx.Err() })
		openerDone <- err
	}()
	for {
		g.mu.Lock()
		queued := g.keys[k].next != nil
		g.mu.Unlock()
		if queued {
			break
		}
		time.Sleep(time.Millisecond)
	}
	joined := make(chan int, 1)
	go func() { // ends when its do returns
		v, _ := g.do(t.Context(), k, func(ctx context.Context) (int, error) { return 3, nil })
		joined <- v
	}()
	// A joiner that leaves returns at once.
	jctx, jcancel := context.WithCancel(t.Context())
	jerr := make(chan error, 1)
	go func() { // ends when its do returns
		_, err := g.do(jctx, k, func(ctx context.Context) (int, error) { return 4, nil })
		jerr <- err
	}()
	jcancel()
	if err := <-jerr; !errors.Is(err, context.Canceled) {
		t.Fatalf("a joiner that left: %v", err)
	}
	ocancel()
	close(block)
	if err := <-openerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("opener: %v", err)
	}
	if v := <-joined; v != 3 {
		t.Fatalf("a joiner of a read its opener abandoned got %d, want its own read (3)", v)
	}
}
