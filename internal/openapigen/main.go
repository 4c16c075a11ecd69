// Command openapigen writes the OpenAPI 3.1 document of locknode's HTTP
// API (httpapi/openapi.json) from the Go wire types: field names, types
// and which fields an answer always carries come from the types' JSON
// tags, descriptions and examples from the tables in this package. Run
// it through go generate in httpapi; TestDocumentIsGenerated fails when
// the committed document differs from what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "openapi.json", "file to write")
	flag.Parse()
	b, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}
