package calibrate

import "sync"

// completeTrees is a binnedForest's trees laid out as complete binary
// trees of the forest's depth, so that a walk computes its next node
// (2j, or 2j + 1 to go right) instead of loading it, and its splits read
// one table of a query's outcomes. Tree t's split j (1 ≤ j < 2^depth,
// the root at 1) is key[t][j], feature·rowLen + bin: it goes
// right iff the query's bin of that feature exceeds bin. A query fills
// a table with the outcome of every (feature, bin) once, gt[feature·rowLen
// + bin] = 1 iff its bin exceeds bin, and each step of a walk is then one
// load of a key and one of an outcome, where the binned walk also loaded
// the next node's offsets and spilled its eight walks' state (the Go
// compiler keeps few of them in registers). A leaf above the last level
// is pushed down its left branch: its place's splits are dummies whose
// outcome is always 0 (the table's last row, left zero), and its value is
// that of its leftmost leaf, value[t][l] for leaf l. The walk
// reaches the same leaf as the binned one for every query and sums the
// leaves in the same order (TestBinnedForestSameBits).
type completeTrees struct {
	key   [][1 << completeDepth]uint16
	value [][1 << completeDepth]float64
	memo  binMemo
}

// binMemo remembers the forest's sum by a query's bins: the sum depends on
// them alone, and the GEMMs of a step model's token counts share them
// (Llama-3.1-8B's four GEMM shapes on the H100 over the token counts 1 to
// 8,192 have 2,202 to 2,357 distinct bin vectors each), so most of a cold
// run's walks find their sum here. It is safe for concurrent use (a
// Calibrated may be shared), and bounded: past maxMemo entries it stops
// adding. What it returns is what the walk would, so it changes no bits.
type binMemo struct {
	mu  sync.Mutex
	sum map[binKey]float64
}

// binKey is a query's bins, a byte each (a laid-out forest's bins are
// below rowLen).
type binKey [(numFeatures + 7) / 8]uint64

// maxMemo bounds a memo (about 5 MiB at the bound).
const maxMemo = 1 << 16

func keyOf(bins *[numFeatures]uint16) binKey {
	var k binKey
	for j, b := range bins {
		k[j>>3] |= uint64(b) << (8 * (j & 7))
	}
	return k
}

func (m *binMemo) get(k binKey) (float64, bool) {
	m.mu.Lock()
	v, ok := m.sum[k]
	m.mu.Unlock()
	return v, ok
}

func (m *binMemo) put(k binKey, v float64) {
	m.mu.Lock()
	if m.sum == nil {
		m.sum = make(map[binKey]float64)
	}
	if len(m.sum) < maxMemo {
		m.sum[k] = v
	}
	m.mu.Unlock()
}

const (
	// completeDepth is the layout's depth: a forest of that depth or
	// less is laid out (a shallower one's leaves pushed down), a deeper
	// one is not. The profiles' trees are grown to depth 6.
	completeDepth = 6
	// rowLen is the outcomes a feature's row holds: a feature's bins run
	// from 0 to its threshold count, so a forest whose features have more
	// than rowLen − 1 thresholds is not laid out (the profiles' have at
	// most 63: their trees were grown on 64 bins).
	rowLen = 64
	// outcomes is the table's size: a row per feature and the dummies'.
	outcomes = (numFeatures + 1) * rowLen
	dummyKey = uint16(numFeatures * rowLen)
)

// newCompleteTrees returns b's trees as complete trees, or nil where b's
// depth or threshold counts are beyond the layout's bounds.
func newCompleteTrees(b *binnedForest) *completeTrees {
	if b.depth > completeDepth {
		return nil
	}
	for j := range b.thr {
		if len(b.thr[j]) >= rowLen {
			return nil
		}
	}
	const d = completeDepth
	c := &completeTrees{key: make([][1 << d]uint16, len(b.roots)), value: make([][1 << d]float64, len(b.roots))}
	for t, r := range b.roots {
		key, value := &c.key[t], &c.value[t]
		var fill func(i int32, j, level int)
		fill = func(i int32, j, level int) {
			if level == d {
				value[j-1<<d] = b.value[i] // a leaf at the last level
				return
			}
			n := b.nodes[i]
			if n.left == 0 { // a leaf above the last level: down its left branch
				key[j] = dummyKey
				fill(i, 2*j, level+1)
				fill(i, 2*j+1, level+1) // never reached; filled for tidiness
				return
			}
			key[j] = uint16(int(n.feature)*rowLen + int(n.bin))
			fill(i+1, 2*j, level+1)
			fill(i+n.right, 2*j+1, level+1)
		}
		fill(r, 1, 0)
	}
	return c
}

// onesPrefix[n] is a row of outcomes for a bin of n: 1 for the splits at
// bins below n (the query goes right), 0 above. Read-only after init.
var onesPrefix = func() (t [rowLen][rowLen]byte) {
	for n := range t {
		for b := range n {
			t[n][b] = 1
		}
	}
	return t
}()

// at is binnedForest.at over the complete trees, for x's bins: the
// memo's sum, or the walk's (then remembered).
func (c *completeTrees) at(base float64, bins *[numFeatures]uint16) float64 {
	k := keyOf(bins)
	if v, ok := c.memo.get(k); ok {
		return v
	}
	v := c.walk(base, bins)
	c.memo.put(k, v)
	return v
}

// walk is at by walking the trees.
func (c *completeTrees) walk(base float64, bins *[numFeatures]uint16) float64 {
	// The outcomes, a feature's row copied from onesPrefix (its bin's
	// prefix of ones: 64 bytes in four moves, where a loop computed and
	// stored each word, half of a walk's instructions). The dummies' row
	// stays zero. A row's bin is at most rowLen − 1 (newCompleteTrees).
	var gt [outcomes]byte
	for f := range numFeatures {
		*(*[rowLen]byte)(gt[f*rowLen:]) = onesPrefix[bins[f]&(rowLen-1)]
	}
	key, value := c.key, c.value
	leaf := func(t int) float64 {
		k := &key[t]
		j := 1
		j = 2*j + int(gt[k[j]])
		j = 2*j + int(gt[k[j]])
		j = 2*j + int(gt[k[j]])
		j = 2*j + int(gt[k[j]])
		j = 2*j + int(gt[k[j&63]])
		j = 2*j + int(gt[k[j&63]])
		return value[t][j&63] // j − 64: the leaves follow the 63 splits
	}
	// Summed as binnedForest.at sums: eight leaves a round in two fours,
	// then four, then one at a time.
	s, n, t := base, len(key), 0
	for ; t+8 <= n; t += 8 {
		v0, v1, v2, v3 := leaf(t), leaf(t+1), leaf(t+2), leaf(t+3)
		v4, v5, v6, v7 := leaf(t+4), leaf(t+5), leaf(t+6), leaf(t+7)
		s += v0 + v1 + v2 + v3
		s += v4 + v5 + v6 + v7
	}
	for ; t+4 <= n; t += 4 {
		s += leaf(t) + leaf(t+1) + leaf(t+2) + leaf(t+3)
	}
	for ; t < n; t++ {
		s += leaf(t)
	}
	return s
}
