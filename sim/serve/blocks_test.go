package serve

import (
	"testing"

	"github.com/servesim/servesim/policies"
)

// TestBlocksOfPhaseOf checks the shift and mask forms of blocksOf and
// phaseOf (power-of-two block sizes) and the division forms (others)
// against the definitions: ⌈tokens / bs⌉ (the truncating division
// (tokens + bs − 1) / bs) and the floored (d0 − k0) mod bs.
func TestBlocksOfPhaseOf(t *testing.T) {
	for _, bs := range []int{1, 2, 16, 32, 256, 3, 12, 100} {
		in := newInstance(0, InstanceConfig{Step: linearTimer{base: 1, perToken: 1}, Blocks: 10, BlockSize: bs, Limits: policies.Limits{MaxNumSeqs: 1, MaxNumBatchedTokens: 16}, Batcher: policies.Chunked{}}, &World{})
		if pow2 := bs&(bs-1) == 0; pow2 != (in.bsShift >= 0) {
			t.Fatalf("block size %d: shift %d", bs, in.bsShift)
		}
		for tok := -3 * bs; tok <= 5*bs+7; tok++ {
			if got, want := in.blocksOf(tok), (tok+bs-1)/bs; got != want {
				t.Fatalf("block size %d: blocksOf(%d) = %d, want %d", bs, tok, got, want)
			}
		}
		for x := int64(-4 * bs); x <= int64(4*bs); x++ {
			r := &request{d0: x + 1000, k0: 1000}
			want := int(((x % int64(bs)) + int64(bs)) % int64(bs))
			if got := in.phaseOf(r); got != want {
				t.Fatalf("block size %d: phaseOf(d0 − k0 = %d) = %d, want %d", bs, x, got, want)
			}
		}
	}
}
