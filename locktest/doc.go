// Package locktest is the conformance suite of api.Locker: the semantics
// every implementation must share — the embedded cluster.Node, the
// remote client.Client over the HTTP API, and test doubles — so that
// "embedded and remote clients pass the same test suite" is a test, not a
// claim.
//
//	func TestConformance(t *testing.T) {
//		locktest.Run(t, func(t *testing.T) api.Locker { return myLocker })
//	}
//
// newLocker is called once per subtest; it may return the same Locker
// every time (one cluster for the whole suite): every subtest uses keys,
// owners and elections of its own. Subtests run in parallel with each
// other. Timing-dependent checks (lease expiry) use generous deadlines
// and never sleep as synchronisation; the suite takes a few seconds.
//
// It is a test helper: only tests import it.
package locktest
