// Package fence lets a resource server refuse writes from a lock holder
// that has been superseded: the holder sends its fencing token (the
// Lock.Fence of the grant) with each request, and the resource admits a
// token only if it is at least the highest it has seen for that resource.
//
// A lock alone cannot stop a holder that paused (GC, swap, a stopped VM)
// past its lease from writing after the next holder did; the resource
// checking the fence can. The pieces:
//
//  1. A Checker records the highest token per resource and answers
//     CheckAndAdvance. Memory keeps it in this process; pgfence keeps it
//     in PostgreSQL, inside the transaction of the guarded write; a
//     *client.Client asks the cluster's fence registry. All three have the
//     method of api.Locker.FenceCheck.
//  2. WithRegistry puts the cluster's registry in front of a local
//     Checker, so that a token no grant ever issued (a forged or corrupted
//     one, larger than any real token) is refused instead of being
//     recorded and blocking the resource for every real holder.
//  3. Middleware checks the token of each HTTP request at the door and
//     answers 409 stale_fence to an old one.
//
// What the middleware cannot do: two requests admitted at nearly the same
// time (tokens 5 then 6) may still reach the resource in the other order.
// Where writes must be strictly ordered, make the write itself conditional
// on the fence in one atomic step — pgfence.Store.CheckTx does this inside
// the write's transaction; FromContext gives the handler the token.
package fence
