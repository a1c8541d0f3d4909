//go:build !unix

package scenario

import "os"

// Without flock(2) (not a unix system) runs do not lock their output
// directories: a run's files are still renamed into place one by one, but
// two runs committing into one directory at the same instant may
// interleave, and a live run's set directory is told from a dead one's by
// age alone (SweepStale's StaleAge).

func lockShared(*os.File) error               { return nil }
func lockExclusive(*os.File) error            { return nil }
func unlock(*os.File)                         {}
func tryLockExclusive(*os.File) (bool, error) { return true, nil }
