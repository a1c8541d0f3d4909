//go:build toml_builtins

package calibrate_test

// A build with the toml_builtins tag leaves the generated profiles out.
func init() { tomlOnly = true }
