package serve

import (
	"reflect"
	"testing"
)

// TestRequestReset sets every field of a request, resets it and checks
// that everything is zero but the storage it keeps (the hash and unit
// slices, emptied, their arrays kept, and the ingress event) and the heap
// index, −1.
func TestRequestReset(t *testing.T) {
	r := &request{}
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported fields
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(7)
		case reflect.Uint8, reflect.Uint64:
			f.SetUint(7)
		case reflect.Float64:
			f.SetFloat(7)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 2, 4))
		case reflect.Struct:
			g := f.Field(0) // rand.PCG's state
			reflect.NewAt(g.Type(), g.Addr().UnsafePointer()).Elem().SetUint(7)
		default:
			t.Fatalf("field %s: kind %v not set by the test", v.Type().Field(i).Name, f.Kind())
		}
	}
	hashes, units, ev := r.hashes, r.units, r.ingressEv
	r.reset()
	if cap(r.hashes) != 4 || len(r.hashes) != 0 || &r.hashes[:1][0] != &hashes[0] ||
		cap(r.units) != 4 || len(r.units) != 0 || &r.units[:1][0] != &units[0] || r.ingressEv != ev {
		t.Fatalf("reset dropped the storage it keeps")
	}
	if r.hidx != -1 {
		t.Fatalf("reset left hidx %d, want -1 (not in the finish heap)", r.hidx)
	}
	r.hashes, r.units, r.ingressEv, r.hidx = nil, nil, nil, 0
	if !reflect.ValueOf(*r).IsZero() {
		t.Fatalf("reset left fields set: %+v", *r)
	}
}
