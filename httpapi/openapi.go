package httpapi

import (
	_ "embed"
	"net/http"
)

//go:generate go run ../internal/openapigen -o openapi.json

// openAPIDoc is the OpenAPI document, generated from the wire types by
// internal/openapigen (go generate); its tests check it against the
// routes served and the answers sent.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API (a copy).
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = jsonContentType
	_, _ = w.Write(openAPIDoc)
}
