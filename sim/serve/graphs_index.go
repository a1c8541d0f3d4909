package serve

import "sort"

// maxIndexed is the largest capture size given a table (64 Ki entries, 256 KiB).
const maxIndexed = 1 << 16

// indexed returns a copy of g with its dispatch table filled: padded[n]
// is the first size ≥ n (g.Sizes[sort.SearchInts(g.Sizes, n)]) for every
// n from 0 to the largest size, so that dispatch looks a step's padded
// size up instead of a binary search (a handful of unpredictable branches
// every step). g itself is left alone (a resolved configuration may be
// shared by concurrent runs); nil stays nil, and eager graphs and sizes
// that are not ascending or too many get no table.
func (g *CUDAGraphs) indexed() *CUDAGraphs {
	if g == nil {
		return nil
	}
	c := *g
	c.padded = nil
	if c.Eager || len(c.Sizes) == 0 || !sort.IntsAreSorted(c.Sizes) || c.Sizes[0] < 1 || c.Sizes[len(c.Sizes)-1] > maxIndexed {
		return &c
	}
	top := c.Sizes[len(c.Sizes)-1]
	c.padded = make([]uint32, top+1)
	i := 0
	for n := range c.padded {
		for c.Sizes[i] < n {
			i++
		}
		c.padded[n] = uint32(c.Sizes[i])
	}
	return &c
}
