package datasets

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

//go:embed manifest.toml
var manifestTOML string

// How a file's checksum is known (File.Checksum).
const (
	// SharedCopy: computed from the copy in ../shared/data, which its
	// SOURCE.md records as byte-identical to the public file.
	SharedCopy = "shared-copy"
	// LFSPointer: the oid of the Git LFS pointer in the source repository.
	LFSPointer = "lfs-pointer"
	// Unknown: no checksum; a fetch reports the file as unverified.
	Unknown = "unknown"
)

// A Dataset is one public data set.
type Dataset struct {
	Name    string `toml:"name"`
	Title   string `toml:"title"`
	Source  string `toml:"source"`  // repository or page, with the pinned commit
	License string `toml:"license"` // shown before a fetch
	// Shared is the data set's folder under ../shared/data ("" when that
	// copy does not hold it); files sit at the same relative paths there.
	Shared string `toml:"shared"`
	Files  []File `toml:"file"`
}

// A File is one file of a data set.
type File struct {
	Path     string `toml:"path"`  // relative to the data set's folder, slash-separated
	Alias    string `toml:"alias"` // short name for NAME:ALIAS references ("" none)
	URL      string `toml:"url"`
	Size     int64  `toml:"size"`   // bytes; 0 when unknown
	SHA256   string `toml:"sha256"` // hex; "" when unknown
	Checksum string `toml:"checksum"`
}

// Verified reports whether the file's content can be checked.
func (f File) Verified() bool { return f.SHA256 != "" }

// Size returns the total of the data set's known file sizes and whether
// every size is known.
func (d Dataset) Size() (bytes int64, complete bool) {
	complete = true
	for _, f := range d.Files {
		bytes += f.Size
		complete = complete && f.Size > 0
	}
	return bytes, complete
}

// Unverified counts the files with no checksum.
func (d Dataset) Unverified() int {
	n := 0
	for _, f := range d.Files {
		if !f.Verified() {
			n++
		}
	}
	return n
}

// manifest parses the embedded manifest on first use (not at init: most
// runs use no data set).
var manifest = sync.OnceValue(func() []Dataset {
	ds, err := parseManifest(manifestTOML)
	if err != nil {
		panic(err) // the embedded manifest is checked by TestManifest
	}
	return ds
})

func parseManifest(text string) ([]Dataset, error) {
	var m struct {
		Dataset []Dataset `toml:"dataset"`
	}
	md, err := toml.Decode(text, &m)
	if err != nil {
		return nil, fmt.Errorf("datasets: manifest.toml: %w", err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return nil, fmt.Errorf("datasets: manifest.toml: unknown field %q", u[0].String())
	}
	seen := map[string]bool{}
	for _, d := range m.Dataset {
		if d.Name == "" || seen[d.Name] || strings.ContainsAny(d.Name, `:/\`) {
			return nil, fmt.Errorf("datasets: manifest.toml: data set name %q empty, repeated or with : / \\", d.Name)
		}
		seen[d.Name] = true
		paths := map[string]bool{}
		for _, f := range d.Files {
			if err := checkFile(f); err != nil {
				return nil, fmt.Errorf("datasets: manifest.toml: data set %s: %w", d.Name, err)
			}
			if paths[f.Path] || (f.Alias != "" && paths["alias:"+f.Alias]) {
				return nil, fmt.Errorf("datasets: manifest.toml: data set %s: file %s or alias %q repeated", d.Name, f.Path, f.Alias)
			}
			paths[f.Path], paths["alias:"+f.Alias] = true, f.Alias != ""
		}
	}
	return m.Dataset, nil
}

func checkFile(f File) error {
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(f.Path)))
	if f.Path == "" || clean != f.Path || filepath.IsAbs(f.Path) || strings.HasPrefix(clean, "../") || clean == ".." {
		return fmt.Errorf("file %q: path must be relative and clean", f.Path)
	}
	if !strings.HasPrefix(f.URL, "https://") && !strings.HasPrefix(f.URL, "http://") {
		return fmt.Errorf("file %s: url %q is not http(s)", f.Path, f.URL)
	}
	switch f.Checksum {
	case SharedCopy, LFSPointer:
		if len(f.SHA256) != 64 || f.Size <= 0 {
			return fmt.Errorf("file %s: checksum %s needs sha256 (64 hex digits) and size", f.Path, f.Checksum)
		}
	case Unknown:
		if f.SHA256 != "" {
			return fmt.Errorf("file %s: checksum unknown but sha256 given", f.Path)
		}
	default:
		return fmt.Errorf("file %s: checksum %q: want %s, %s or %s", f.Path, f.Checksum, SharedCopy, LFSPointer, Unknown)
	}
	return nil
}

// All returns the manifest's data sets in manifest order.
func All() []Dataset { return slices.Clone(manifest()) }

// Names returns the data set names in manifest order.
func Names() []string {
	n := make([]string, len(manifest()))
	for i, d := range manifest() {
		n[i] = d.Name
	}
	return n
}

// Get returns the data set called name; the error lists the known names.
func Get(name string) (Dataset, error) {
	for _, d := range manifest() {
		if d.Name == name {
			return d, nil
		}
	}
	return Dataset{}, fmt.Errorf("datasets: unknown data set %q (known: %s)", name, strings.Join(Names(), ", "))
}

// EnvDir is the environment variable that overrides the cache directory.
const EnvDir = "SERVESIM_DATA"

// Dir returns the cache directory: $SERVESIM_DATA when set, else
// os.UserCacheDir()/servesim.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("datasets: no cache directory (%v): set %s or pass --dir", err, EnvDir)
	}
	return filepath.Join(c, "servesim"), nil
}

// SharedDirs are the places, relative to the working directory, where a
// checkout of the suite's shared data may sit; Lookup tries them in order.
var SharedDirs = []string{"../shared/data", "../../shared/data", "../../../shared/data"}

// Lookup resolves ref. When ref is a data set reference (see the package
// doc) it returns the path of the file or folder in the cache or in
// ../shared/data, ok = true, or an error saying where it looked and what to
// fetch. Otherwise it returns ref itself and ok = false.
func Lookup(ref string) (path string, ok bool, err error) {
	dir, derr := Dir()
	if derr != nil {
		dir = ""
	}
	return lookup(ref, dir, SharedDirs)
}

func lookup(ref, cache string, shared []string) (string, bool, error) {
	if ref == "" {
		return ref, false, nil
	}
	if _, err := os.Stat(ref); err == nil {
		return ref, false, nil // an existing path wins
	}
	name, rest, _ := strings.Cut(ref, ":")
	d, err := Get(name)
	if err != nil {
		return ref, false, nil
	}
	rel := rest
	if rest == "" && len(d.Files) == 1 {
		rel = d.Files[0].Path
	}
	for _, f := range d.Files {
		if rest != "" && f.Alias == rest {
			rel = f.Path
		}
	}
	if rest != "" && !d.has(rel) {
		return "", true, fmt.Errorf("datasets: %s: data set %s has no file, folder or alias %q (aliases: %s; `servesim data list %s` lists its files)", ref, d.Name, rest, d.aliases(), d.Name)
	}
	if rel != "" {
		clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
		if filepath.IsAbs(rel) || clean == ".." || strings.HasPrefix(clean, "../") {
			return "", true, fmt.Errorf("datasets: %s: path %q leaves the data set's folder", ref, rest)
		}
	}
	var tried []string
	try := func(root string) (string, bool) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		tried = append(tried, p)
		_, err := os.Stat(p)
		return p, err == nil
	}
	if cache != "" {
		if p, ok := try(filepath.Join(cache, d.Name)); ok {
			return p, true, nil
		}
	}
	if d.Shared != "" {
		for _, s := range shared {
			if _, err := os.Stat(s); err != nil {
				continue
			}
			if p, ok := try(filepath.Join(s, filepath.FromSlash(d.Shared))); ok {
				return p, true, nil
			}
		}
	}
	return "", true, fmt.Errorf("datasets: %s: not found at %s (run `servesim data fetch %s`, or set %s to where it is)",
		ref, orNone(tried), d.Name, EnvDir)
}

func orNone(tried []string) string {
	if len(tried) == 0 {
		return "the cache (no cache directory) or ../shared/data"
	}
	return strings.Join(tried, " or ")
}

// has reports whether rel is one of d's files or a folder holding some.
func (d Dataset) has(rel string) bool {
	rel = strings.TrimSuffix(filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))), "/")
	for _, f := range d.Files {
		if f.Path == rel || strings.HasPrefix(f.Path, rel+"/") {
			return true
		}
	}
	return false
}

func (d Dataset) aliases() string {
	var a []string
	for _, f := range d.Files {
		if f.Alias != "" {
			a = append(a, f.Alias)
		}
	}
	if len(a) == 0 {
		return "none"
	}
	return strings.Join(a, ", ")
}
