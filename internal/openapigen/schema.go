package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// schemas builds the components' JSON Schemas (2020-12, as OpenAPI 3.1
// uses) from Go types by reflection.
type schemas struct {
	defs map[string]any
	// required lists, for request types, the fields the server refuses
	// a body without; an answer's required fields are those without
	// omitempty (it always carries them).
	required map[reflect.Type][]string
	docs     map[string]string // "Type" and "Type.json_name" -> description
	used     map[string]bool   // docs entries used
}

// ref returns a reference to t's schema, adding it (and what it refers
// to) on first use. Only named struct types get a component.
func (s *schemas) ref(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return s.inline(t)
	}
	name := t.Name()
	if _, ok := s.defs[name]; !ok {
		s.defs[name] = nil // refers to itself: not again
		s.defs[name] = s.object(t)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func (s *schemas) inline(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": s.ref(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("map key %v", t.Key()))
		}
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "additionalProperties": s.ref(t.Elem())}
	case reflect.Pointer, reflect.Struct:
		return s.ref(t)
	}
	panic(fmt.Sprintf("openapigen: no schema for %v", t))
}

// object is a struct's schema: its JSON fields, embedded structs'
// fields in place, no other properties (the server refuses unknown
// request fields, and the tests check answers carry no undocumented
// ones).
func (s *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var always []string
	s.fields(t, t.Name(), props, &always)
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	req, isRequest := s.required[t]
	if !isRequest {
		req = always
	}
	for _, f := range req {
		if _, ok := props[f]; !ok {
			panic(fmt.Sprintf("openapigen: required field %s.%s does not exist", t.Name(), f))
		}
	}
	if len(req) > 0 {
		sort.Strings(req)
		o["required"] = req
	}
	if one, ok := requestOneOf[t]; ok {
		var alts []any
		for _, f := range one {
			alts = append(alts, map[string]any{"required": []string{f}})
		}
		o["oneOf"] = alts
	}
	if d := s.doc(t.Name()); d != "" {
		o["description"] = d
	}
	return o
}

func (s *schemas) fields(t reflect.Type, owner string, props map[string]any, always *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			s.fields(f.Type, owner, props, always)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.inline(f.Type)
		if d := s.doc(owner + "." + name); d != "" {
			if _, isRef := p["$ref"]; isRef {
				p = map[string]any{"allOf": []any{p}, "description": d}
			} else {
				p["description"] = d
			}
		}
		props[name] = p
		if !strings.Contains(opts, "omitempty") {
			*always = append(*always, name)
		}
	}
}

func (s *schemas) doc(k string) string {
	d, ok := s.docs[k]
	if ok {
		s.used[k] = true
	}
	return d
}
