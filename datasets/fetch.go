package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Fetcher downloads data sets into Dir.
type Fetcher struct {
	Dir    string       // the cache directory; each data set goes to Dir/NAME
	Client *http.Client // nil: http.DefaultClient
	// Log receives one line per file (what was done, verified or not);
	// nil: nothing is written.
	Log io.Writer
}

// FileResult says what a fetch did with one file.
type FileResult struct {
	File     File
	Path     string // where the file now is
	Action   string // "cached" (already there and matching), "downloaded" or "resumed"
	Bytes    int64  // bytes transferred this time
	Verified bool   // size and SHA-256 checked against the manifest
}

// Fetch makes every file of d present under f.Dir/d.Name. A file already
// there is kept when it matches its manifest size and checksum (an
// unverified one is kept as it is). Otherwise it is downloaded to PATH.part
// (resumed with a Range request when that file exists), checked, and renamed
// into place; a download that does not match is removed. A file that
// fails does not stop the others: Fetch goes on with the next file and
// returns the files done and every failure (errors.Join, one line each,
// a network failure said as such: NetworkError). It stops at once when ctx
// is cancelled.
func (f *Fetcher) Fetch(ctx context.Context, d Dataset) ([]FileResult, error) {
	if f.Dir == "" {
		return nil, errors.New("datasets: no cache directory given")
	}
	var out []FileResult
	var errs []error
	for _, file := range d.Files {
		r, err := f.fetchFile(ctx, d, file)
		if err != nil {
			if ctx.Err() != nil {
				return out, errors.Join(append(errs, err)...)
			}
			errs = append(errs, err)
			if f.Log != nil {
				fmt.Fprintf(f.Log, "%s/%s: failed: %v\n", d.Name, file.Path, err)
			}
			continue
		}
		out = append(out, r)
		if f.Log != nil {
			v := "verified (size and sha256, " + file.Checksum + ")"
			if !r.Verified {
				v = "unverified: the manifest has no checksum for it"
			}
			fmt.Fprintf(f.Log, "%s/%s: %s, %d bytes, %s\n", d.Name, file.Path, r.Action, r.Bytes, v)
		}
	}
	return out, errors.Join(errs...)
}

// NetworkError is a download that could not reach its host (no network, a
// name that does not resolve, a refused connection): said in words, with
// the host and the underlying error.
type NetworkError struct {
	Host string
	Err  error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("cannot reach %s (no network, or the host is down: %v)", e.Host, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// networkError returns err as a *NetworkError when it is a failure to reach
// url's host (DNS or connection), else err.
func networkError(url string, err error) error {
	var dns *net.DNSError
	var op *net.OpError
	if !errors.As(err, &dns) && !(errors.As(err, &op) && op.Op == "dial") {
		return err
	}
	host := url
	if u, perr := neturl.Parse(url); perr == nil && u.Host != "" {
		host = u.Host
	}
	inner := err
	if dns != nil {
		inner = dns
	} else {
		inner = op
	}
	return &NetworkError{Host: host, Err: inner}
}

func (f *Fetcher) fetchFile(ctx context.Context, d Dataset, file File) (FileResult, error) {
	dst := filepath.Join(f.Dir, d.Name, filepath.FromSlash(file.Path))
	res := FileResult{File: file, Path: dst, Verified: file.Verified()}
	where := fmt.Sprintf("datasets: %s/%s", d.Name, file.Path)
	if _, err := os.Stat(dst); err == nil {
		if !file.Verified() {
			res.Action = "cached"
			return res, nil
		}
		if err := check(dst, file); err == nil {
			res.Action = "cached"
			return res, nil
		}
		// a cached copy that no longer matches is fetched again
	}
	part := dst + ".part"
	from, n, err := f.download(ctx, file.URL, part, file.Size)
	res.Bytes = n
	if err != nil {
		err = networkError(file.URL, err)
		if _, serr := os.Stat(part); serr == nil {
			return res, fmt.Errorf("%s: %s: %w (the partial file %s is kept: fetch again to resume)", where, file.URL, err, part)
		}
		return res, fmt.Errorf("%s: %s: %w", where, file.URL, err)
	}
	res.Action = "downloaded"
	if from > 0 {
		res.Action = "resumed"
	}
	if err := check(part, file); err != nil {
		os.Remove(part)
		return res, fmt.Errorf("%s: %s: %w (the download was removed)", where, file.URL, err)
	}
	if err := os.Rename(part, dst); err != nil {
		os.Remove(part)
		return res, fmt.Errorf("%s: %w", where, err)
	}
	return res, nil
}

// download appends the rest of url to part: from the byte after part's
// current end (a Range request) when part exists, else from the start. It
// returns the offset it resumed from and the bytes written this time.
func (f *Fetcher) download(ctx context.Context, url, part string, size int64) (from, n int64, err error) {
	var have int64
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	if size > 0 && have > size {
		os.Remove(part) // longer than the file can be: start again
		have = 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case have > 0 && resp.StatusCode == http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			return 0, 0, fmt.Errorf("asked for bytes %d- and got Content-Range %q", have, resp.Header.Get("Content-Range"))
		}
		flags |= os.O_APPEND
		from = have
	case have > 0 && resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && size > 0 && have == size:
		return have, 0, nil // the partial file is already whole
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC // no range support (or a fresh start): the whole file
	default:
		return 0, 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return 0, 0, err
	}
	w, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return 0, 0, err
	}
	var body io.Reader = resp.Body
	if size > 0 {
		body = io.LimitReader(resp.Body, size+1) // one byte over is enough to see a size mismatch
	}
	n, err = io.Copy(w, body)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return from, n, err // a broken transfer keeps its .part for the next fetch to resume
}

// rangeStart parses "bytes START-END/TOTAL".
func rangeStart(cr string) (int64, bool) {
	s, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// check compares path with file's size and checksum (those known).
func check(path string, file File) error {
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return err
	}
	if file.Size > 0 && n != file.Size {
		return fmt.Errorf("size %d bytes, want %d", n, file.Size)
	}
	if file.SHA256 != "" {
		if got := hex.EncodeToString(h.Sum(nil)); got != file.SHA256 {
			return fmt.Errorf("sha256 %s, want %s", got, file.SHA256)
		}
	}
	return nil
}
