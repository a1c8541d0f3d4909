package genwrite

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Files writes every file, in name order, and leaves no temporary file,
// also when a rename fails (a directory stands where "b.txt" goes).
func TestFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked bool // b.txt is a non-empty directory: its rename fails
		log     string
	}{
		{"ok", false, "wrote DIR/a.txt\nwrote DIR/b.txt\n"},
		{"rename fails", true, "wrote DIR/a.txt\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.blocked {
				if err := os.MkdirAll(filepath.Join(dir, "b.txt", "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			err := Files(dir, map[string][]byte{"b.txt": []byte("B"), "a.txt": []byte("A")}, &log)
			if (err != nil) != tc.blocked {
				t.Fatalf("error %v, blocked %v", err, tc.blocked)
			}
			if want := bytes.ReplaceAll([]byte(tc.log), []byte("DIR"), []byte(dir)); !bytes.Equal(log.Bytes(), want) {
				t.Errorf("log %q, want %q", log.Bytes(), want)
			}
			if got, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(got) != "A" {
				t.Errorf("a.txt %q (%v), want \"A\"", got, err)
			}
			for _, tmp := range []string{"a.txt.tmp", "b.txt.tmp"} {
				if _, err := os.Stat(filepath.Join(dir, tmp)); !os.IsNotExist(err) {
					t.Errorf("%s left behind (%v)", tmp, err)
				}
			}
		})
	}
}
