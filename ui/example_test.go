package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/locknode/locknode/ui"
)

// httpapi.New mounts the page this way; a program embedding a node can
// serve it next to its own routes.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", ui.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, p := range []string{"/ui/", "/ui/app.js"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(p, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Frame-Options"))
	}
	// Output:
	// /ui/ 200 text/html; charset=utf-8 DENY
	// /ui/app.js 200 text/javascript; charset=utf-8 DENY
}
