package calibrate

// Forest returns the evaluation form Calibrated builds of t (a *forest,
// unexported), for internal/staticgen to write the built-in profiles'
// forests as Go source; its fields are read by reflection.
func Forest(t *GEMMTrees) any { return newForest(t) }

// forestOf returns the evaluation form of t: for the GEMM trees of a
// built-in profile, its generated form (static data that
// TestStaticProfiles holds equal to newForest's) with a memo of sums of
// its own, as a new forest has; else newForest(t).
func forestOf(t *GEMMTrees) *forest {
	s := builtinForest(t)
	if s == nil {
		return newForest(t)
	}
	f := *s
	if s.binned != nil {
		b := *s.binned
		if c := s.binned.complete; c != nil {
			b.complete = &completeTrees{key: c.key, value: c.value}
		}
		f.binned = &b
	}
	return &f
}
