package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonErrorText says what is wrong with a request body in the API's
// terms (field names as in the JSON, what the field wants), never in Go's
// (struct and type names).
func jsonErrorText(err error) string {
	var (
		typ *json.UnmarshalTypeError
		syn *json.SyntaxError
	)
	switch {
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, not %s", jsonKind(typ.Value))
		}
		return fmt.Sprintf("field %s: want %s, not %s", typ.Field, wantOf(typ.Field, typ.Type.String()), jsonKind(typ.Value))
	case errors.As(err, &syn):
		return fmt.Sprintf("the body is not valid JSON (at byte %d: %s)", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the body is not valid JSON: it ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "; see the API reference (docs/http-api.md) for this request's fields"
	}
	return "the body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// wantOf says what a field of Go type goType takes, in JSON terms;
// fields ending in _ms are durations in whole milliseconds.
func wantOf(field, goType string) string {
	switch {
	case strings.HasSuffix(field, "_ms"):
		return "a whole number of milliseconds"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case goType == "[]string":
		return "an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["):
		return "an object of strings"
	}
	return "another kind of value"
}

// jsonKind names the JSON value an UnmarshalTypeError found ("number",
// "string", "array", "object", "bool", or "number 1.5").
func jsonKind(v string) string {
	switch {
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "array", v == "object", v == "string", v == "number":
		return "a" + map[bool]string{true: "n", false: ""}[v == "array" || v == "object"] + " " + v
	}
	return v
}
