package calibrate

import (
	"math"
	"math/bits"
	"slices"
)

// binnedForest is a forest whose splits compare bin indices instead of
// floats, so that a walk reads 8-byte nodes (a tree of depth 6 is 1 KiB)
// instead of 24-byte ones: the kernel model prices a token count's GEMMs
// once, between simulation steps that have pushed the trees out of the
// caches, and the walk's cache misses were most of its cost.
//
// Each feature's split thresholds, sorted and without repeats, are
// thr[f]; x's bin for feature f is the number of them below x[f]. A split
// on feature f at thr[f][j] goes right iff x[f] > thr[f][j] iff more than
// j thresholds lie below x[f] iff bin > j: the walk reaches the same leaf
// for every x (NaN included: no threshold lies below NaN, and NaN > v is
// false), and at sums the leaves in forest.atFloat's order, so the two
// return the same bits (TestBinnedForestSameBits).
type binnedForest struct {
	base  float64
	roots []int32
	nodes []binNode
	value []float64 // the leaf value of each node (0 for a split)
	depth int
	thr   [numFeatures][]float64
	// keys are every feature's thresholds as orderKey, feature by
	// feature: feature j's are keys[off[j]:off[j+1]].
	keys []uint64
	off  [numFeatures + 1]int
	// padded holds each feature's keys in a row of 64, the rest of the
	// row above every key (math.MaxUint64), so that a search takes six
	// fixed steps (bin); nil where a feature has 64 thresholds or more.
	padded *[numFeatures][64]uint64
	// complete is the trees as complete trees (trees_complete.go), which
	// at walks when set; nil: at walks nodes.
	complete *completeTrees
	// modBins are the bins of the residue features (M mod 64 … K mod
	// 256, features modFirst on), which take the integers 0 to 255, by
	// value: a lookup where the search took eight dependent steps.
	modBins [numModFeatures][256]uint16
}

// modFirst is the first of gemmFeatures' numModFeatures residue features.
const (
	modFirst       = 5 + 3*len(featureTiles)
	numModFeatures = 5
)

// binNode is a split (left = 1: from node i to i+1 if the feature's bin
// is ≤ bin, else to i+right) or a leaf (left = right = 0, bin =
// noSplit: the walk stays).
type binNode struct {
	right   int32
	bin     uint16
	feature uint8
	left    uint8
}

// noSplit is a leaf's bin: no bin exceeds it (a feature has fewer
// thresholds).
const noSplit = math.MaxUint16

// newBinnedForest returns f over bin indices, or nil where it cannot be
// (a feature with noSplit or more distinct thresholds, or one beyond a
// uint8: not so in a validated profile, whose features number
// numFeatures).
func newBinnedForest(f *forest) *binnedForest {
	b := &binnedForest{base: f.base, roots: f.roots, depth: f.depth,
		nodes: make([]binNode, len(f.nodes)), value: make([]float64, len(f.nodes))}
	for i := range f.nodes {
		if n := &f.nodes[i]; n.left != 0 {
			if n.feature < 0 || int(n.feature) >= numFeatures {
				return nil
			}
			b.thr[n.feature] = append(b.thr[n.feature], n.value)
		}
	}
	for j := range b.thr {
		slices.Sort(b.thr[j])
		b.thr[j] = slices.Compact(b.thr[j])
		if len(b.thr[j]) >= noSplit {
			return nil
		}
		b.off[j] = len(b.keys)
		for _, v := range b.thr[j] {
			b.keys = append(b.keys, orderKey(v+0)) // +0: −0 as +0, which it equals
		}
	}
	b.off[numFeatures] = len(b.keys)
	b.padded = new([numFeatures][64]uint64)
	for j := range b.padded {
		ks := b.keys[b.off[j]:b.off[j+1]]
		if len(ks) >= 64 {
			b.padded = nil
			break
		}
		row := &b.padded[j]
		for i := range row {
			row[i] = math.MaxUint64
		}
		copy(row[:], ks)
	}
	for i := range f.nodes {
		n := &f.nodes[i]
		if n.left == 0 {
			b.nodes[i] = binNode{bin: noSplit}
			b.value[i] = n.value
			continue
		}
		j, _ := slices.BinarySearch(b.thr[n.feature], n.value)
		b.nodes[i] = binNode{right: n.right, bin: uint16(j), feature: uint8(n.feature), left: 1}
	}
	for j := range b.modBins {
		for v := range b.modBins[j] {
			b.modBins[j][v] = b.bin(modFirst+j, float64(v))
		}
	}
	b.complete = newCompleteTrees(b)
	return b
}

// orderKey maps a float other than NaN to a key in the same order
// (−0 before +0): the bits with the sign flipped, or all of them flipped
// for a negative number.
func orderKey(x float64) uint64 {
	b := math.Float64bits(x)
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

// bin returns feature j's bin for value v: the count of its thresholds
// below v (none below NaN).
func (f *binnedForest) bin(j int, v float64) uint16 {
	if v != v {
		v = math.Inf(-1) // NaN: no threshold below it, as for −Inf
	}
	kx := orderKey(v)
	if f.padded != nil {
		// Six halvings of the padded row, unrolled (no key below x's
		// is a pad, so the count is at most 63): the same count.
		row := &f.padded[j]
		base := 0
		_, b := bits.Sub64(row[31], kx, 0)
		base += 32 & -int(b)
		_, b = bits.Sub64(row[(base+15)&63], kx, 0)
		base += 16 & -int(b)
		_, b = bits.Sub64(row[(base+7)&63], kx, 0)
		base += 8 & -int(b)
		_, b = bits.Sub64(row[(base+3)&63], kx, 0)
		base += 4 & -int(b)
		_, b = bits.Sub64(row[(base+1)&63], kx, 0)
		base += 2 & -int(b)
		_, b = bits.Sub64(row[base&63], kx, 0)
		base += int(b)
		return uint16(base)
	}
	// A binary search over the ascending keys that moves its base
	// by a mask: base is the count of keys below x's at the end.
	ks := f.keys[f.off[j]:f.off[j+1]]
	base, n := 0, len(ks)
	for n > 1 {
		h := n / 2
		_, b := bits.Sub64(ks[base+h-1], kx, 0) // 1 iff the h-th key from base is below x's
		base += h & -int(b)
		n -= h
	}
	if n == 1 {
		_, b := bits.Sub64(ks[base], kx, 0)
		base += int(b)
	}
	return uint16(base)
}

// at is forest.at: the log correction for feature vector x.
func (f *binnedForest) at(x []float64) float64 {
	// Without branches that the walk's data decides: a token count's
	// features follow no pattern a branch predictor learns, and the
	// mispredictions were most of the walk's cost. A feature's bin is
	// found over its thresholds' keys (a borrow is 1 iff key < x's); a
	// split selects its child with a mask.
	var bins [numFeatures]uint16
	for j := range numFeatures {
		if v := x[j]; j-modFirst < numModFeatures && j >= modFirst && v >= 0 && v < 256 && float64(int(v)) == v {
			bins[j] = f.modBins[j-modFirst][int(v)] // an integer residue
			continue
		}
		bins[j] = f.bin(j, x[j])
	}
	if f.complete != nil {
		return f.complete.at(f.base, &bins)
	}
	nodes := f.nodes
	step := func(i int32) int32 {
		n := nodes[i]
		m := (int32(n.bin) - int32(bins[n.feature])) >> 31 // −1 iff bin < the feature's: go right
		l := int32(n.left)
		return i + l + (n.right-l)&m
	}
	s, v, roots := f.base, f.value, f.roots
	t := 0
	for ; t+8 <= len(roots); t += 8 {
		// Eight walks at once (the float walk's four, twice): the sum
		// keeps its order, four leaves at a time.
		r := roots[t : t+8]
		i0, i1, i2, i3, i4, i5, i6, i7 := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
		for range f.depth {
			i0, i1, i2, i3 = step(i0), step(i1), step(i2), step(i3)
			i4, i5, i6, i7 = step(i4), step(i5), step(i6), step(i7)
		}
		s += v[i0] + v[i1] + v[i2] + v[i3]
		s += v[i4] + v[i5] + v[i6] + v[i7]
	}
	for ; t+4 <= len(roots); t += 4 {
		i0, i1, i2, i3 := roots[t], roots[t+1], roots[t+2], roots[t+3]
		for range f.depth {
			i0, i1, i2, i3 = step(i0), step(i1), step(i2), step(i3)
		}
		s += v[i0] + v[i1] + v[i2] + v[i3]
	}
	for ; t < len(roots); t++ {
		i := roots[t]
		for range f.depth {
			i = step(i)
		}
		s += v[i]
	}
	return s
}
