// Package ui is the dashboard's page: plain HTML, CSS and JavaScript
// embedded in the binary (no build step, no CDN, works offline), served
// by httpapi at /ui/. The page polls the HTTP API's JSON routes once a
// second; it holds no state on the server.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves the page's files (index.html, app.js, style.css) at
// the root of its path; mount it under a prefix with http.StripPrefix.
// Every answer forbids framing (so no other site can overlay the admin
// buttons) and loading anything from elsewhere.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
