// Package lockservice is the lock API of locknode written once over a
// replicated table: Service implements api.Locker (locks, sessions,
// fences, elections, key watches) over a Replica, validating each
// request, building one FSM command, proposing it through the replica's
// Apply and mapping the FSM's refusals to api errors (errors.go).
//
// Two replicas exist. A cluster.Node is the table behind raft; Local is
// one in-process table (a mutex in place of raft), for tests and
// single-process use. The package links no raft, so test doubles built
// on Local (httpapitest.Fake) do not either.
//
// A replica's responsibilities, which Service relies on:
//
//  1. Apply stamps each command with the cluster clock and applies it in
//     log order; commands with a request id are exactly-once.
//  2. Every applied entry's events go to Hub.Dispatch, in log order,
//     before the next entry's: blocking acquires learn their outcome
//     from the waiter registry, watchers from the key watches.
//  3. Read evaluates deadlines at a time no later write contradicts
//     (ReadTime).
//  4. Closing closes when the replica stops; blocked calls then return
//     ErrClosed.
package lockservice
