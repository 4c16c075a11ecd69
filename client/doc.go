// Package client is the Go client of a locknode cluster over its HTTP API
// (the contract in package wire; it links no server code). *Client implements api.Locker, so code written
// against api.Locker runs unchanged on an embedded cluster.Node or
// remotely; on top it offers lock handles, sessions and an HTTP
// middleware.
//
//	c, err := client.New(client.Config{Endpoints: []string{"http://n1:7700", "http://n2:7700"}})
//	l, err := c.Lock(ctx, "jobs/nightly", client.WithTTL(10*time.Second))
//	if err != nil { ... }                 // api.ErrWaitTimeout, api.ErrCancelled, api.ErrNoLeader
//	defer l.Unlock(context.Background())
//	doWork(l.Context(), l.Fence())        // stops when the lock is in jeopardy
//
// # Your responsibilities
//
//  1. Do the guarded work under Lock.Context() (or select on Lost()):
//     it is cancelled when renewal has been failing and the safe deadline
//     is near — before the server could hand the lock to anyone else.
//  2. Pass Lock.Fence() to the resource you protect and let it reject
//     older tokens (api.Locker.FenceCheck does CheckAndAdvance for you;
//     packages fence and fence/pgfence do it at an HTTP server and in
//     PostgreSQL): no deadline protects against a pause between a check
//     and a write.
//  3. Call Unlock. A forgotten lock is renewed for as long as the process
//     lives — unless WithProgressTimeout is set and the work stops calling
//     Lock.Progress, which stops the renewal.
//  4. Share one Client per process: coalescing and fail-over state live in
//     it.
//
// # Fail-over and retries
//
// A request goes to the endpoint that answered last; on a connection
// error, an attempt timeout or a 502/503/504 it is sent to the next one
// at once, and after a round of every endpoint the client backs off
// (exponential, full jitter, bounded: RetryPolicy). Mutating lock
// requests (acquire, try, release, extend) carry a request id generated
// once per logical operation and reused by every retry: the server
// answers a repeat with the first answer, so a retry after a lost answer
// neither grants twice nor releases someone else's later hold. When all
// attempts fail the error wraps api.ErrNoLeader; if some node answered
// (503 no_leader) that answer is returned, since it says more than
// another endpoint's dial failure. Failures of the client's own setup —
// an untrusted certificate, one for another name, a refused client
// certificate, http:// against a TLS node or https:// against a plain
// one (ConnError.Config) — end the call after one round of the
// endpoints: retrying cannot help.
//
// # Transport
//
// Without Config.HTTPClient, requests to http:// endpoints are written and
// read by the calling goroutine over pooled keep-alive connections
// (NewTransport), which costs markedly less CPU and latency per request
// than net/http's Transport; https and proxied endpoints use net/http's.
// A caller that wants its own http.Client (to count or trace requests)
// can still build it around NewTransport.
//
// # Lock handles
//
// Lock and TryLock return a *Lock whose renewal loop extends the lease
// every TTL/3 and whose state moves Held → Jeopardy → Lost (or Released):
// see the Lock type for the exact deadlines. Sessions (NewSession) are
// kept alive every TTL/3 the same way and signal their end on Done.
//
// Every hold carries this process's host and pid as metadata, which
// Inspect, List, LOCK.INFO and `locknode locks` show with the grant time;
// WithMetadata adds more, WithoutDefaultMetadata and
// Config.NoDefaultMetadata leave the defaults out.
//
// # Coalescing
//
// Goroutines of one Client waiting in Lock for the same key with the same
// options share ONE server-side waiter and take the lock in local FIFO
// order; each still gets its own grant, owner token and fence (see
// coalesce.go for why). WithoutCoalescing, WithOwner, and shared or
// semaphore modes opt out.
//
// # Errors
//
// Server refusals are *Error values that unwrap to the api sentinels
// (errors.Is(err, api.ErrLocked)); the mapping is package wire's one table.
// A node that could not be talked to at all is a *ConnError (errors.As)
// whose Cause names why: TLS trust, the certificate's names, a client
// certificate, the scheme, nothing listening.
package client
