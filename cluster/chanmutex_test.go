package cluster

import (
	"testing"
	"testing/synctest"
	"time"
)

// In a synctest bubble a goroutine waiting on chanMutex is durably
// blocked, so virtual time moves while the holder sleeps (a simulated
// process pause); with a sync.Mutex the bubble would stop here for good.
func TestChanMutexWaiterLetsTimeMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m chanMutex
		m.Lock()
		start := time.Now()
		got := make(chan time.Duration)
		go func() { // ends once it has held the mutex
			m.Lock()
			got <- time.Since(start)
			m.Unlock()
		}()
		time.Sleep(time.Second)
		m.Unlock()
		if d := <-got; d != time.Second {
			t.Fatalf("the waiter got the mutex after %v, want 1s", d)
		}
	})
}

func TestChanMutexExcludes(t *testing.T) {
	var m chanMutex
	n := 0
	done := make(chan struct{})
	for range 8 {
		go func() { // ends after its increments
			for range 1000 {
				m.Lock()
				n++
				m.Unlock()
			}
			done <- struct{}{}
		}()
	}
	for range 8 {
		<-done
	}
	if n != 8000 {
		t.Fatalf("n = %d, want 8000", n)
	}
}
