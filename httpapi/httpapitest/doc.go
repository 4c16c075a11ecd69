// Package httpapitest provides test doubles for the HTTP lock API: Fake,
// an api.Locker with the real lock semantics (the lock service over one
// in-process table, lockservice.Local) and test hooks (injected failures,
// call records), and Server, an httptest server around httpapi.New with
// fault switches (drop connections, lose answers).
//
// They exist for tests of httpapi and client; production code never
// imports this package.
package httpapitest
