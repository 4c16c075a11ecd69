package httpapi

// RouteCategories exposes the route table to the external tests.
var RouteCategories = routeCategories

// SetUIScanBound lowers MaxUIScan for a test, restoring it at its end;
// the test must not run in parallel.
func SetUIScanBound(t interface{ Cleanup(func()) }, n int) {
	old := uiScanBound
	uiScanBound = n
	t.Cleanup(func() { uiScanBound = old })
}
