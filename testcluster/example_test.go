package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/locknode/locknode/testcluster"
)

// A user's critical section: take the lock, write to a fenced resource
// with the lock's fence, release. testcluster checks that it keeps
// working — and stays safe — when the lock cluster's leader crashes
// mid-run. In your own code, criticalSectionTest is a Test function.
func Example() {
	t := &exampleTB{}
	defer t.cleanup()
	criticalSectionTest(t)
	fmt.Println("failed:", t.failed)
	// Output: failed: false
}

func criticalSectionTest(t testing.TB) {
	c := testcluster.New(t, 3, testcluster.Options{})
	h := testcluster.NewHistory()
	store := testcluster.NewResource(h) // stands in for the user's storage
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const ttl = 2 * time.Second
	critical := func(cl *testcluster.Client, id int) error {
		owner := testcluster.NewOwner()
		g, err := cl.Acquire(ctx, "orders", owner, ttl, 5*time.Second)
		if err != nil {
			return err
		}
		safe := g.Sent.Sub(h.Start()) + ttl - ttl/10
		if !store.Write(id, g.Fence, safe) { // the user's write, fenced
			return fmt.Errorf("write refused")
		}
		_, err = cl.Release(ctx, "orders", owner)
		return err
	}
	cl := c.HTTPClient(h, 0) // fails over between nodes
	defer cl.Close()
	for i := range 5 {
		if i == 2 {
			c.Crash(c.LeaderIndex())
		}
		if err := critical(cl, 0); err != nil {
			t.Logf("attempt %d: %v", i, err)
		}
	}
	if _, err := testcluster.CheckFencing(store.Writes()); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.CheckLinearizable(h.Ops(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

// exampleTB lets the Example run outside a test; a Test gets a real one.
type exampleTB struct {
	testing.TB // methods not below are never called by testcluster
	cleanups   []func()
	dirs       []string
	failed     bool
}

func (t *exampleTB) Helper()                   {}
func (t *exampleTB) Log(args ...any)           {}
func (t *exampleTB) Logf(string, ...any)       {}
func (t *exampleTB) Cleanup(f func())          { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Errorf(f string, a ...any) { t.failed = true; fmt.Printf(f+"\n", a...) }
func (t *exampleTB) Fatal(a ...any)            { t.failed = true; panic(fmt.Sprint(a...)) }
func (t *exampleTB) Fatalf(f string, a ...any) { t.failed = true; panic(fmt.Sprintf(f, a...)) }
func (t *exampleTB) Failed() bool              { return t.failed }
func (t *exampleTB) TempDir() string {
	d, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, d)
	return d
}

func (t *exampleTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	for _, d := range t.dirs {
		os.RemoveAll(d)
	}
}
