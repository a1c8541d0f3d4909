package models

import (
	"fmt"
	"strconv"
	"strings"
)

// opKindNames are the stable snake_case names of the operator classes, in
// OpKind order. CSV headers and calibration files use them: never rename one.
var opKindNames = [NumOpKinds]string{
	OpEmbed:       "embed",
	OpNorm:        "norm",
	OpQKV:         "qkv",
	OpRoPE:        "rope",
	OpAttnPrefill: "attn_prefill",
	OpAttnDecode:  "attn_decode",
	OpOutProj:     "out_proj",
	OpAllReduce:   "all_reduce",
	OpMoERouter:   "moe_router",
	OpMLPUp:       "mlp_up",
	OpAct:         "act",
	OpMLPDown:     "mlp_down",
	OpAdd:         "add",
	OpLMHead:      "lm_head",
	OpQKNorm:      "qk_norm",
}

// String returns the operator's stable snake_case name ("qkv",
// "attn_prefill", ...), or "OpKind(n)" for a value outside the enumeration.
func (k OpKind) String() string {
	if k < NumOpKinds {
		return opKindNames[k]
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// ParseOpKind parses a name returned by OpKind.String, ignoring case and
// surrounding space.
func ParseOpKind(s string) (OpKind, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for k, name := range opKindNames {
		if t == name {
			return OpKind(k), nil
		}
	}
	return 0, fmt.Errorf("models: unknown operator %q (want one of %s)", s, strings.Join(opKindNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (k OpKind) MarshalText() ([]byte, error) {
	if k >= NumOpKinds {
		return nil, fmt.Errorf("models: invalid operator %s", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseOpKind.
func (k *OpKind) UnmarshalText(text []byte) error {
	v, err := ParseOpKind(string(text))
	if err != nil {
		return err
	}
	*k = v
	return nil
}
