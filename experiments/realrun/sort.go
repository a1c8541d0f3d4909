package realrun

import (
	"cmp"
	"slices"
)

func sortByArrival(rs []Request) {
	slices.SortStableFunc(rs, func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
}
