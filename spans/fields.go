package spans

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Field is one span of a struct value: its JSON name and the field itself,
// which a caller may read or set.
type Field struct {
	Name string
	Span *Span
}

// Fields is the one walk over a value's spans: the Span fields of the
// struct v points to, in field order, each with its JSON name. Fields of
// embedded structs are walked where encoding/json flattens them; a field
// whose JSON name is "-" is skipped, and so are nested structs, pointers,
// slices and Ranges (they are not spans of the value itself). v must be a
// non-nil pointer to a struct.
//
// A type that adds a span field needs no list of its spans anywhere else:
// resolving, validating and shrinking its spans go through Fields.
func Fields(v any) []Field {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("spans.Fields: %T is not a pointer to a struct", v))
	}
	rv = rv.Elem()
	paths := spanPaths(rv.Type())
	out := make([]Field, len(paths))
	for i, p := range paths {
		out[i] = Field{Name: p.name, Span: rv.FieldByIndex(p.index).Addr().Interface().(*Span)}
	}
	return out
}

// spanPath is where a Span field sits in its struct type.
type spanPath struct {
	name  string
	index []int
}

var pathCache sync.Map // reflect.Type → []spanPath

func spanPaths(t reflect.Type) []spanPath {
	if p, ok := pathCache.Load(t); ok {
		return p.([]spanPath)
	}
	p := collect(t, nil)
	pathCache.Store(t, p)
	return p
}

var spanType = reflect.TypeFor[Span]()

func collect(t reflect.Type, prefix []int) []spanPath {
	var out []spanPath
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		index := append(append([]int(nil), prefix...), i)
		switch {
		case name == "-":
		case f.Type == spanType && f.IsExported():
			if name == "" {
				name = f.Name
			}
			out = append(out, spanPath{name, index})
		case f.Anonymous && f.Type.Kind() == reflect.Struct && name == "":
			out = append(out, collect(f.Type, index)...)
		}
	}
	return out
}
