package golit

import (
	"math"
	"strings"
	"testing"
)

type inner struct {
	A []int
	B []float64
}

type node struct {
	f    int32
	v    float64
	name string
}

type outer struct {
	Nodes []node
	S     string
	F     float64
	F32   float32
	I     int
	U     uint8
	Ok    bool
	P     *inner
	In    inner
	Ins   []inner
	Arr   [2]int
	SS    [][]float64
	Ptr   []*inner
	Nil   []string
	E     []string
}

func TestLiteral(t *testing.T) {
	v := outer{
		S: "a\"b\n", F: 0.1, F32: 1.5, I: -3, U: 7, Ok: true,
		P:     &inner{A: []int{1, 2}},
		In:    inner{B: []float64{1e-300, 2.5e+20}},
		Ins:   []inner{{A: []int{}}, {}},
		Arr:   [2]int{0, 4},
		SS:    [][]float64{{1, 2}, {}},
		Ptr:   []*inner{{A: []int{5}}, nil},
		E:     []string{},
		Nodes: []node{{1, 0.5, "a"}, {}},
	}
	got, err := Literal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`S: "a\"b\n",`, "F: 0.1,", "F32: 1.5,", "I: -3,", "U: 7,", "Ok: true,",
		"P: &inner{\nA: []int{1, 2},\n},", "B: []float64{1e-300, 2.5e+20},",
		"Ins: []inner{\n{\nA: []int{},\n},\n{},\n},", "Arr: [2]int{0, 4},",
		"SS: [][]float64{\n{1, 2},\n{},\n},", "Ptr: []*inner{\n&inner{\nA: []int{5},\n},\nnil,\n},", "E: []string{},", "Nodes: []node{\n{1, 0.5, \"a\"},\n{0, 0, \"\"},\n},",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("literal lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Nil") {
		t.Errorf("a nil slice is written:\n%s", got)
	}
	if _, err := File([]string{"// header", "", "//go:build ignore"}, "p", []string{"var x = " + got}); err != nil {
		t.Errorf("not Go: %v", err)
	}
}

func TestLiteralErrors(t *testing.T) {
	for _, v := range []any{
		math.NaN(), math.Inf(1), math.Copysign(0, -1),
		outer{In: inner{B: []float64{math.Inf(-1)}}},
		map[string]int{"a": 1}, []any{1}, struct{ C chan int }{make(chan int)},
	} {
		if s, err := Literal(v); err == nil {
			t.Errorf("%#v: no error, wrote %s", v, s)
		}
	}
}
