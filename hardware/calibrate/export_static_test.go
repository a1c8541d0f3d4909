package calibrate

// For TestStaticProfiles (package calibrate_test, which can import
// staticgen).
var (
	BuiltinStatic = builtinStatic
	BuiltinFS     = builtinFS
)

// BuiltinForest is builtinForest(t), nil as an untyped nil.
func BuiltinForest(t *GEMMTrees) any {
	if f := builtinForest(t); f != nil {
		return f
	}
	return nil
}

// ForestOf is forestOf.
func ForestOf(t *GEMMTrees) any { return forestOf(t) }
