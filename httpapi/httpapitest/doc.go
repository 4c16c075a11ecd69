// Package httpapitest provides test doubles for the HTTP lock API: Fake,
// an in-memory api.Locker with real-time leases, FIFO waiters, sessions,
// elections and exactly-once request ids, and Server, an httptest server
// around httpapi.New with fault switches (drop connections, lose answers).
//
// They exist for tests of httpapi and client; production code never
// imports this package.
package httpapitest
