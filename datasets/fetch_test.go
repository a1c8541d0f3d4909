package datasets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// content is the served file: 10,000 bytes (i mod 251 for byte i, so a
// shifted or truncated copy never matches).
var content = func() []byte {
	b := make([]byte, 10000)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// server serves content at /f (with Range support, via http.ServeContent),
// at /norange (ignoring Range), at /short (announcing 10,000 bytes but
// sending 4,000 and closing) and 404 elsewhere; it records each Range
// header it saw.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	ranges []string
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/f":
			http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(content))
		case "/norange":
			w.Write(content)
		case "/short":
			w.Header().Set("Content-Length", "10000")
			w.Write(content[:4000])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func TestFetch(t *testing.T) {
	good := sum(content)
	cases := []struct {
		name    string
		path    string // served path
		size    int64
		sha     string
		partial []byte // a .part file already there
		cached  []byte // a finished file already there
		wantErr string // "" = success
		action  string
		bytes   int64
		ranges  []string // Range headers the server saw
		left    []byte   // the file's content afterwards (nil: absent)
		keep    bool     // the .part is still there afterwards
	}{
		{name: "full download", path: "/f", size: 10000, sha: good,
			action: "downloaded", bytes: 10000, ranges: []string{""}, left: content},
		{name: "resume a partial file", path: "/f", size: 10000, sha: good, partial: content[:3000],
			// 10,000 − 3,000 = 7,000 bytes asked for from byte 3,000
			action: "resumed", bytes: 7000, ranges: []string{"bytes=3000-"}, left: content},
		{name: "partial file already whole", path: "/f", size: 10000, sha: good, partial: content,
			// the server answers 416 to bytes=10000- of a 10,000-byte file
			action: "resumed", bytes: 0, ranges: []string{"bytes=10000-"}, left: content},
		{name: "server without Range: whole file again", path: "/norange", size: 10000, sha: good, partial: content[:3000],
			action: "downloaded", bytes: 10000, ranges: []string{"bytes=3000-"}, left: content},
		{name: "corrupt partial file fails the checksum and is removed", path: "/f", size: 10000, sha: good,
			partial: bytes.Repeat([]byte{7}, 3000), wantErr: "sha256", ranges: []string{"bytes=3000-"}},
		{name: "checksum mismatch", path: "/f", size: 10000, sha: sum([]byte("other")),
			wantErr: "sha256 " + good + ", want", ranges: []string{""}},
		{name: "size mismatch: file shorter than the manifest", path: "/f", size: 10001, sha: good,
			wantErr: "size 10000 bytes, want 10001", ranges: []string{""}},
		{name: "size mismatch: file longer than the manifest", path: "/f", size: 9000, sha: good,
			// 9,000 + 1: the copy stops one byte over the size
			wantErr: "size 9001 bytes, want 9000", ranges: []string{""}},
		{name: "404", path: "/missing", size: 10000, sha: good,
			wantErr: "HTTP 404", ranges: []string{""}},
		{name: "404 keeps a partial file for later", path: "/missing", size: 10000, sha: good, partial: content[:10],
			wantErr: "is kept: fetch again to resume", ranges: []string{"bytes=10-"}, keep: true},
		{name: "broken transfer keeps its partial file", path: "/short", size: 10000, sha: good,
			wantErr: "fetch again to resume", ranges: []string{""}, keep: true},
		{name: "cached and matching: no request", path: "/f", size: 10000, sha: good, cached: content,
			action: "cached", left: content},
		{name: "cached but changed: fetched again", path: "/f", size: 10000, sha: good, cached: content[:5],
			action: "downloaded", bytes: 10000, ranges: []string{""}, left: content},
		{name: "unverified: no checksum, no size", path: "/f",
			action: "downloaded", bytes: 10000, ranges: []string{""}, left: content},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t)
			dir := t.TempDir()
			how := Unknown
			if c.sha != "" {
				how = SharedCopy
			}
			d := Dataset{Name: "t", Files: []File{{Path: "sub/f.csv", URL: srv.URL + c.path, Size: c.size, SHA256: c.sha, Checksum: how}}}
			dst := filepath.Join(dir, "t", "sub", "f.csv")
			if c.partial != nil || c.cached != nil {
				os.MkdirAll(filepath.Dir(dst), 0o755)
			}
			if c.partial != nil {
				os.WriteFile(dst+".part", c.partial, 0o644)
			}
			if c.cached != nil {
				os.WriteFile(dst, c.cached, 0o644)
			}
			var log bytes.Buffer
			f := &Fetcher{Dir: dir, Client: srv.Client(), Log: &log}
			res, err := f.Fetch(context.Background(), d)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "datasets: t/sub/f.csv: ") {
					t.Errorf("error %q does not say which file", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 1 || res[0].Action != c.action || res[0].Bytes != c.bytes || res[0].Verified != (c.sha != "") {
					t.Fatalf("result %+v, want action %s, %d bytes, verified %v", res, c.action, c.bytes, c.sha != "")
				}
				want := "verified"
				if c.sha == "" {
					want = "unverified"
				}
				if !strings.Contains(log.String(), "t/sub/f.csv: "+c.action) || !strings.Contains(log.String(), want) {
					t.Errorf("log %q, want %s and %s", log.String(), c.action, want)
				}
			}
			if got := srv.seen(); strings.Join(got, "|") != strings.Join(c.ranges, "|") {
				t.Errorf("Range headers %q, want %q", got, c.ranges)
			}
			got, err := os.ReadFile(dst)
			switch {
			case c.left == nil && err == nil:
				t.Errorf("%s is there after a failed fetch", dst)
			case c.left != nil && !bytes.Equal(got, c.left):
				t.Errorf("%s: %d bytes, want %d", dst, len(got), len(c.left))
			}
			if _, err := os.Stat(dst + ".part"); (err == nil) != c.keep {
				t.Errorf(".part there: %v, want %v", err == nil, c.keep)
			}
		})
	}
}

// A broken transfer is resumed by the next fetch: 4,000 bytes then the
// other 6,000 from byte 4,000.
func TestFetchResumesAfterBreak(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	d := Dataset{Name: "t", Files: []File{{Path: "f", URL: srv.URL + "/short", Size: 10000, SHA256: sum(content), Checksum: SharedCopy}}}
	f := &Fetcher{Dir: dir, Client: srv.Client()}
	if _, err := f.Fetch(context.Background(), d); err == nil {
		t.Fatal("broken transfer: no error")
	}
	d.Files[0].URL = srv.URL + "/f"
	res, err := f.Fetch(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Action != "resumed" || res[0].Bytes != 6000 {
		t.Fatalf("%+v, want resumed with 6000 bytes", res[0])
	}
	if got := srv.seen(); len(got) != 2 || got[1] != "bytes=4000-" {
		t.Fatalf("Range headers %q", got)
	}
}

func TestFetchNoDir(t *testing.T) {
	if _, err := (&Fetcher{}).Fetch(context.Background(), Dataset{Name: "t"}); err == nil || !strings.HasPrefix(err.Error(), "datasets: ") {
		t.Fatalf("error %v", err)
	}
}

// A file that fails does not stop the others: of three files, the first
// unreachable (a closed port: connection refused), the second missing on
// the server (404), the third good, Fetch fetches the third and returns
// both failures, the first said as a network failure (NetworkError, naming
// the host).
func TestFetchGoesOnAfterAFailure(t *testing.T) {
	srv := newServer(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	dead := closed.URL // nothing listens there once closed
	closed.Close()
	dir := t.TempDir()
	d := Dataset{Name: "t", Files: []File{
		{Path: "a", URL: dead + "/f", Size: 10000, SHA256: sum(content), Checksum: SharedCopy},
		{Path: "b", URL: srv.URL + "/nope", Size: 10000, SHA256: sum(content), Checksum: SharedCopy},
		{Path: "c", URL: srv.URL + "/f", Size: 10000, SHA256: sum(content), Checksum: SharedCopy},
	}}
	var log strings.Builder
	res, err := (&Fetcher{Dir: dir, Client: srv.Client(), Log: &log}).Fetch(context.Background(), d)
	if len(res) != 1 || res[0].File.Path != "c" {
		t.Fatalf("results %+v, want c alone", res)
	}
	if _, serr := os.Stat(filepath.Join(dir, "t", "c")); serr != nil {
		t.Errorf("c not fetched: %v", serr)
	}
	var ne *NetworkError
	if !errors.As(err, &ne) || ne.Host != strings.TrimPrefix(dead, "http://") {
		t.Errorf("error %v, want a NetworkError for %s", err, dead)
	}
	for _, w := range []string{"t/a: " + dead + "/f: cannot reach", "t/b: " + srv.URL + "/nope"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	if !strings.Contains(log.String(), "t/a: failed: ") || !strings.Contains(log.String(), "t/c: downloaded") {
		t.Errorf("log %q: want a failed line for a and a downloaded one for c", log.String())
	}
}
