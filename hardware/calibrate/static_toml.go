//go:build toml_builtins

package calibrate

// builtinStatic is what static_profiles.go generates, in a build with the
// toml_builtins tag, which leaves the generated files out: every built-in
// profile is then parsed from its TOML (cmd/genstatic builds so, that a
// stale generated file cannot stop it).
func builtinStatic(string) (*Profile, string) { return nil, "" }

// builtinForest: no generated forests (see builtinStatic).
func builtinForest(*GEMMTrees) *forest { return nil }
