// Package golit writes Go values as Go source: composite literals the
// compiler lays out as static data, for tables that would otherwise be
// parsed from an embedded file at every start (the built-in profiles of
// hardware/calibrate). It is used by generators and their tests only.
//
// A value is written as it is, bit for bit and shape for shape: a nil
// slice or pointer is left out (the zero value), an empty slice is written
// as an empty literal, so the generated value is reflect.DeepEqual to the
// one written. Named types are written by their bare name (the generated
// file must be in their package); unnamed slice, array and pointer types
// are spelled out. Values it cannot write exactly are errors: NaN,
// infinities and negative zero (a Go constant has none), maps, interfaces,
// functions and channels.
package golit

import (
	"fmt"
	"go/format"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Literal returns v as a Go expression (gofmt'ed when placed in a file;
// see File).
func Literal(v any) (string, error) {
	var w writer
	if err := w.value(reflect.ValueOf(v), true); err != nil {
		return "", err
	}
	return w.b.String(), nil
}

// File returns a gofmt'ed Go file of package pkg: header (comment lines
// as they are, build constraints among them), then decls, each a
// declaration.
func File(header []string, pkg string, decls []string) ([]byte, error) {
	var b strings.Builder
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	b.WriteString("\npackage " + pkg + "\n")
	for _, d := range decls {
		b.WriteString("\n" + d + "\n")
	}
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("golit: %w", err)
	}
	return src, nil
}

type writer struct{ b strings.Builder }

// typeName spells t as Go source in the package of its named types.
func typeName(t reflect.Type) (string, error) {
	if t.Name() != "" {
		return t.Name(), nil
	}
	switch t.Kind() {
	case reflect.Slice:
		e, err := typeName(t.Elem())
		return "[]" + e, err
	case reflect.Array:
		e, err := typeName(t.Elem())
		return fmt.Sprintf("[%d]%s", t.Len(), e), err
	case reflect.Pointer:
		e, err := typeName(t.Elem())
		return "*" + e, err
	}
	return "", fmt.Errorf("golit: unnamed type %s", t)
}

// value writes v; typed says whether its type must be written (false for
// the elements of a slice or array literal, whose type Go elides).
func (w *writer) value(v reflect.Value, typed bool) error {
	switch v.Kind() {
	case reflect.Bool:
		w.b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) || (f == 0 && math.Signbit(f)) {
			return fmt.Errorf("golit: %v has no Go constant", f)
		}
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		w.b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
	case reflect.String:
		w.b.WriteString(strconv.Quote(v.String()))
	case reflect.Pointer:
		if v.IsNil() {
			w.b.WriteString("nil")
			return nil
		}
		w.b.WriteString("&")
		return w.value(v.Elem(), true)
	case reflect.Struct:
		return w.structLit(v, typed)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			w.b.WriteString("nil")
			return nil
		}
		if typed {
			t, err := typeName(v.Type())
			if err != nil {
				return err
			}
			w.b.WriteString(t)
		}
		// Elements that are composite go one to a line; numbers and
		// strings run on.
		sep := ", "
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Slice, reflect.Array, reflect.Pointer:
			sep = ",\n"
		}
		w.b.WriteString("{")
		if sep != ", " && v.Len() > 0 {
			w.b.WriteString("\n")
		}
		for i := range v.Len() {
			if i > 0 {
				w.b.WriteString(sep)
			}
			if err := w.value(v.Index(i), false); err != nil {
				return err
			}
		}
		if sep != ", " && v.Len() > 0 {
			w.b.WriteString(",\n")
		}
		w.b.WriteString("}")
	default:
		return fmt.Errorf("golit: cannot write a %s", v.Kind())
	}
	return nil
}

// structLit writes a struct literal with its non-zero fields by name,
// or, as the element of a slice or array, a struct of numbers and
// strings alone with every field in order on one line ({1, 2, 0.5}).
func (w *writer) structLit(v reflect.Value, typed bool) error {
	if !typed && scalars(v.Type()) {
		w.b.WriteString("{")
		for i := range v.NumField() {
			if i > 0 {
				w.b.WriteString(", ")
			}
			if err := w.value(v.Field(i), true); err != nil {
				return fmt.Errorf("%w (field %s)", err, v.Type().Field(i).Name)
			}
		}
		w.b.WriteString("}")
		return nil
	}
	if typed {
		t, err := typeName(v.Type())
		if err != nil {
			return err
		}
		w.b.WriteString(t)
	}
	w.b.WriteString("{")
	n := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		if n == 0 {
			w.b.WriteString("\n")
		}
		n++
		w.b.WriteString(v.Type().Field(i).Name + ": ")
		if err := w.value(f, true); err != nil {
			return fmt.Errorf("%w (field %s)", err, v.Type().Field(i).Name)
		}
		w.b.WriteString(",\n")
	}
	w.b.WriteString("}")
	return nil
}

// scalars reports whether t's fields are all numbers, booleans and
// strings.
func scalars(t reflect.Type) bool {
	for i := range t.NumField() {
		switch t.Field(i).Type.Kind() {
		case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			return false
		}
	}
	return t.NumField() > 0
}
