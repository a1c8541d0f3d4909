package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReplace checks that replace puts src at dst whether or not dst
// exists, and leaves what dst held at src or nothing.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "new"), filepath.Join(dir, "out")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	write(src, "one")
	if err := replace(src, dst); err != nil {
		t.Fatal(err)
	}
	if got := read(dst); got != "one" {
		t.Errorf("dst %q after replacing nothing, want %q", got, "one")
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Errorf("src after replacing nothing: %v, want it gone", err)
	}
	write(src, "two")
	if err := replace(src, dst); err != nil {
		t.Fatal(err)
	}
	if got := read(dst); got != "two" {
		t.Errorf("dst %q after replacing a file, want %q", got, "two")
	}
	if got := read(src); got != "one" && got[0] != '<' {
		t.Errorf("src %q after replacing a file, want the old file (%q) or none", got, "one")
	}
	if err := replace(filepath.Join(dir, "missing"), dst); err == nil {
		t.Error("replacing with a missing file succeeded")
	}
	if got := read(dst); got != "two" {
		t.Errorf("dst %q after a failed replace, want %q", got, "two")
	}
}
