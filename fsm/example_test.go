package fsm_test

import (
	"fmt"

	"github.com/locknode/locknode/fsm"
)

// A lock handed from its holder to a queued waiter; the waiter's fence is
// the index of the entry that granted it.
func Example() {
	tab := fsm.New(fsm.DefaultConfig())
	apply := func(index uint64, c fsm.Command) fsm.Result {
		b, _ := c.MarshalBinary() // what the leader replicates
		return tab.ApplyBytes(index, b)
	}

	r := apply(1, fsm.Command{Op: fsm.OpAcquire, Time: 1000, Key: "orders", Owner: "alice", TTL: 5000})
	fmt.Println("alice granted:", r.Granted, "fence:", r.Fence)

	r = apply(2, fsm.Command{Op: fsm.OpAcquire, Time: 1010, Key: "orders", Owner: "bob", TTL: 5000,
		Wait: 30_000, ReqID: "bob-1"})
	fmt.Println("bob queued:", r.Queued)

	r = apply(3, fsm.Command{Op: fsm.OpRelease, Time: 1020, Key: "orders", Owner: "alice"})
	for _, e := range r.Events {
		if e.Kind == fsm.EvGranted {
			fmt.Println("granted to waiter", e.WaiterID, "owner", e.Owner, "fence", e.Fence, "until", e.Deadline)
		}
	}

	r = apply(4, fsm.Command{Op: fsm.OpFenceCheck, Time: 1030, Key: "orders-db", Token: 1})
	fmt.Println("stale fence accepted:", r.Granted)
	r = apply(5, fsm.Command{Op: fsm.OpFenceCheck, Time: 1040, Key: "orders-db", Token: 3})
	fmt.Println("bob's fence accepted:", r.Granted)
	r = apply(6, fsm.Command{Op: fsm.OpFenceCheck, Time: 1050, Key: "orders-db", Token: 1})
	fmt.Println("alice's late write:", r.Err)
	// Output:
	// alice granted: true fence: 1
	// bob queued: true
	// granted to waiter bob-1 owner bob fence 3 until 6020
	// stale fence accepted: true
	// bob's fence accepted: true
	// alice's late write: fsm: fence token older than the highest seen: 1 < 3
}
