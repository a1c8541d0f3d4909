//go:build unix

package scenario

import (
	"errors"
	"os"
	"syscall"
)

// flock(2) locks on an open file or directory (runset.go). The kernel drops
// them when the descriptor is closed or the process dies.

func lockShared(f *os.File) error    { return flock(f, syscall.LOCK_SH) }
func lockExclusive(f *os.File) error { return flock(f, syscall.LOCK_EX) }
func unlock(f *os.File)              { flock(f, syscall.LOCK_UN) }

// tryLockExclusive takes the exclusive lock if it is free (true), or
// reports that another holds a lock (false).
func tryLockExclusive(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
