//go:build calibrate_toml

package calibrate_test

// A build with the calibrate_toml tag leaves the generated profiles out.
func init() { tomlOnly = true }
