package main

import (
	"bytes"
	"os"
	"testing"
)

// TestDocumentIsGenerated: the committed httpapi/openapi.json is what
// the generator writes from the current types and tables.
func TestDocumentIsGenerated(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("httpapi/openapi.json is not what internal/openapigen generates: run go generate ./httpapi and commit the result")
	}
}
