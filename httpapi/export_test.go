package httpapi

// RouteCategories exposes the route table to the external tests.
var RouteCategories = routeCategories
