//go:build !linux

package scenario

import "os"

// replace is os.Rename (see replace_linux.go).
func replace(src, dst string) error { return os.Rename(src, dst) }
