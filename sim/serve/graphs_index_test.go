package serve

import (
	"slices"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestCUDAGraphsIndexed checks that dispatch through the table gives what
// the binary search gives, for every token count up to past the largest
// size, decode-only and mixed, with and without speculation, padding and
// exact-only; and that indexing leaves the shared configuration alone.
func TestCUDAGraphsIndexed(t *testing.T) {
	cases := []struct {
		name string
		g    CUDAGraphs
		q    int // decode query tokens
	}{
		{"vllm default", CUDAGraphs{Sizes: CaptureSizes(256, 8192), EagerLaunches: 300, PiecewiseLaunches: 60}, 0},
		{"vllm small", CUDAGraphs{Sizes: CaptureSizes(3, 16), EagerLaunches: 3, PiecewiseLaunches: 2}, 0},
		{"spec k=3", CUDAGraphs{Sizes: CaptureSizesSpec(256, 8192, 3), EagerLaunches: 300, PiecewiseLaunches: 60}, 4},
		{"exact only", CUDAGraphs{Sizes: []int{1, 2, 4, 8, 16, 64}, ExactOnly: true, DecodeOnly: true, EagerLaunches: 9}, 0},
		{"one size", CUDAGraphs{Sizes: []int{7}, EagerLaunches: 5, PiecewiseLaunches: 2}, 0},
		{"unsorted: no table", CUDAGraphs{Sizes: []int{8, 4}, EagerLaunches: 5}, 0},
		{"eager", CUDAGraphs{Eager: true, Sizes: []int{1, 2}, EagerLaunches: 5}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := c.g
			sizes := slices.Clone(c.g.Sizes)
			ix := c.g.indexed()
			if c.g.padded != nil || !slices.Equal(c.g.Sizes, sizes) || ix == &c.g {
				t.Fatal("indexed changed the configuration it was given")
			}
			if sorted := slices.IsSorted(sizes); sorted != (ix.padded != nil) && !c.g.Eager {
				t.Fatalf("table %v for sizes %v", ix.padded != nil, sizes)
			}
			top := 0
			if len(sizes) > 0 {
				top = sizes[len(sizes)-1]
			}
			q := max(c.q, 1)
			for n := 0; n <= top/q+3; n++ {
				for _, b := range []models.Batch{
					{Decodes: n, DecodeCtx: 100, DecodeQuery: c.q},
					{Prefills: 1, PrefillTokens: n + 1, Decodes: n / 2, DecodeQuery: c.q},
				} {
					wb, wl := orig.dispatch(b)
					gb, gl := ix.dispatch(b)
					if gb != wb || gl != wl {
						t.Fatalf("batch %+v: indexed %+v, %d launches; searched %+v, %d", b, gb, gl, wb, wl)
					}
				}
			}
		})
	}
	if (*CUDAGraphs)(nil).indexed() != nil {
		t.Fatal("nil graphs indexed to non-nil")
	}
}
