package serve

import (
	"math"
	"sort"
)

// maxIndexed is the largest capture size given a table (64 Ki entries, 128 KiB).
const maxIndexed = 1 << 16

// indexed returns a copy of g with its dispatch table filled: index[n] is
// sort.SearchInts(g.Sizes, n) for every n from 0 to the largest size, so
// that dispatch looks a step's padded size up instead of a binary search
// (a handful of unpredictable branches every step). g itself is left
// alone (a resolved configuration may be shared by concurrent runs); nil
// stays nil, and sizes that are not ascending or too many get no table.
func (g *CUDAGraphs) indexed() *CUDAGraphs {
	if g == nil {
		return nil
	}
	c := *g
	c.index = nil
	if len(c.Sizes) == 0 || len(c.Sizes) > math.MaxUint16 || !sort.IntsAreSorted(c.Sizes) || c.Sizes[0] < 1 || c.Sizes[len(c.Sizes)-1] > maxIndexed {
		return &c
	}
	top := c.Sizes[len(c.Sizes)-1]
	c.index = make([]uint16, top+1)
	i := 0
	for n := range c.index {
		for c.Sizes[i] < n {
			i++
		}
		c.index[n] = uint16(i)
	}
	return &c
}
