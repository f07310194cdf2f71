// Package wirejson reads Go structs as JSON carries them
// (encoding/json/v2's tags): the tests that hold the wire contract once
// (the web client's types, the Go client, the API reference) compare them.
package wirejson

import (
	"reflect"
	"slices"
	"strings"
)

// Field is a field of a struct as JSON carries it.
type Field struct {
	Name     string
	Type     reflect.Type
	Optional bool
}

// Fields are struct t's fields as encoding/json/v2 writes and reads
// them: by their tag's name, inline ones flattened, "-" left out; a
// pointer, or one omitted when empty or zero, is optional.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case slices.Contains(strings.Split(opts, ","), "inline") || f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = append(out, Fields(ft)...)
			continue
		case name == "":
			name = f.Name
		}
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out = append(out, Field{Name: name, Type: f.Type, Optional: optional})
	}
	return out
}

// Names are the JSON names of t's fields, and of the structs they
// hold, once each.
func Names(t reflect.Type) []string {
	var out []string
	var walk func(reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for _, f := range Fields(t) {
			if !slices.Contains(out, f.Name) {
				out = append(out, f.Name)
			}
			walk(f.Type)
		}
	}
	walk(t)
	return out
}
