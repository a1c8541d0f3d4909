package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// A plan's result depends on more than its scenario's text: the model and
// GPU definitions it resolved (a models_file or gpus_file may change), the
// kernel-time profile (a profile file, or the built-in one of this build)
// and a replayed trace's bytes. Plan.Inputs digests them, and a sweep
// point's key includes it, so that rerunning a sweep after any of them
// changed runs its points again instead of reusing stale results.

// DigestOf returns the hex SHA-256 of the JSON of each value in turn.
func DigestOf(vs ...any) string {
	h := sha256.New()
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("scenario: digest of %T: %v", v, err))
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileKey identifies a file's version for the digest cache.
type fileKey struct {
	path string
	size int64
	mod  time.Time // file metadata, not simulation time
}

var fileDigests sync.Map // fileKey → string

// fileDigest returns the hex SHA-256 of a file's bytes, hashing each
// version of a file once per process. The file must be a regular file: a
// device or a pipe (/dev/zero, /dev/stdin, <(zcat trace.gz)) has no end to
// hash, or none left to replay after the hash read it, so it is refused at
// once rather than read forever.
func fileDigest(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("scenario: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("scenario: %s: not a regular file (%s): a trace or profile is read more than once (its digest, then the run), so it must be a file on disk", path, fileKind(st.Mode()))
	}
	k := fileKey{path, st.Size(), st.ModTime()}
	if d, ok := fileDigests.Load(k); ok {
		return d.(string), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("scenario: %s: %w", path, err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	fileDigests.Store(k, d)
	return d, nil
}

// fileKind names a non-regular file's type for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}
