//go:build toml_builtins

package hardware

// staticGPUs is what static_gpus.go generates, in a build with the
// toml_builtins tag, which leaves the generated files out: the built-in
// catalog is then parsed from its TOML (internal/cmd/genstatic builds so,
// that a stale generated file cannot stop it).
var staticGPUs []GPU
