package plots

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// stdPNG is image/png's encoding of img, which encodePNG must match byte
// for byte.
func stdPNG(t testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ourPNG(t testing.TB, img *image.RGBA, workers int) []byte {
	var buf bytes.Buffer
	if err := encodePNG(&buf, img, workers); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noiseImage is an opaque w×h image: random pixels where noisy, else
// bands of flat colour and a gradient (rows a filter sees alike, and rows
// it does not), from seed.
func noiseImage(w, h int, seed uint64, noisy bool) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			i := img.PixOffset(x, y)
			if noisy {
				img.Pix[i], img.Pix[i+1], img.Pix[i+2] = byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())
			} else {
				img.Pix[i], img.Pix[i+1], img.Pix[i+2] = byte(x*7+y), byte(y/5*40), byte(x/3)
			}
			img.Pix[i+3] = 0xff
		}
	}
	return img
}

// TestEncodePNGSameBytes: encodePNG writes image/png's bytes for opaque
// images of many shapes (one row, one column, a band and a row, a plot's
// size) at every worker count, and for images image/png writes with alpha
// (which it hands to png.Encode).
func TestEncodePNGSameBytes(t *testing.T) {
	cases := []struct {
		name string
		img  *image.RGBA
	}{
		{"1x1", noiseImage(1, 1, 1, true)},
		{"1x100", noiseImage(1, 100, 2, true)},
		{"100x1", noiseImage(100, 1, 3, true)},
		{"33x33 noise", noiseImage(33, 33, 4, true)},
		{"97x65 pattern", noiseImage(97, 65, 5, false)},
		{"1600x200 pattern", noiseImage(1600, 200, 6, false)},
		{"300x129 noise", noiseImage(300, 129, 7, true)},
	}
	// A plot's kind of image: white, with a few lines and dots, so that
	// rows and spans repeat the ones above and to the left.
	sparse := noiseImage(500, 300, 11, false)
	r := rand.New(rand.NewPCG(11, 2))
	for i := range sparse.Pix {
		sparse.Pix[i] = 0xff
	}
	for k := range 300 {
		x, y, c := r.IntN(500), r.IntN(300), byte(r.IntN(256))
		for d := range 1 + k%40 {
			j := sparse.PixOffset((x+d)%500, y)
			sparse.Pix[j], sparse.Pix[j+1+k%2] = c, c/2
		}
	}
	cases = append(cases, struct {
		name string
		img  *image.RGBA
	}{"sparse", sparse}, struct {
		name string
		img  *image.RGBA
	}{"20001x2", noiseImage(20001, 2, 12, false)})
	sub := noiseImage(64, 80, 8, true).SubImage(image.Rect(5, 7, 50, 77)).(*image.RGBA)
	cases = append(cases, struct {
		name string
		img  *image.RGBA
	}{"sub-image", sub})
	alpha := noiseImage(40, 40, 9, true)
	alpha.Pix[3] = 0x80
	cases = append(cases, struct {
		name string
		img  *image.RGBA
	}{"not opaque", alpha})
	for _, c := range cases {
		want := stdPNG(t, c.img)
		for _, workers := range []int{0, 1, 2, 3, 8} {
			if got := ourPNG(t, c.img, workers); !bytes.Equal(got, want) {
				t.Errorf("%s, %d workers: %d bytes differ from image/png's %d", c.name, workers, len(got), len(want))
			}
		}
	}
}

// TestSavedPlotSameBytes: a sweep plot saved through Save is the file
// image/png writes for the canvas's image.
func TestSavedPlotSameBytes(t *testing.T) {
	res := readResults(t, "goodput.csv")
	f, _, err := Goodput(res, GoodputOptions{X: "workload.rate"})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		path := filepath.Join(t.TempDir(), "goodput.png")
		canvas, err := renderCanvas(f, path, DefaultWidth, DefaultHeight, workers)
		if err != nil {
			t.Fatal(err)
		}
		img := canvas.(pngCanvas).img
		want := stdPNG(t, img)
		var got bytes.Buffer
		if _, err := canvas.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d workers: the plot's PNG differs from image/png's encoding", workers)
		}
	}
}

// failAfter fails every write once n bytes are written.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		n := f.n
		f.n = 0
		return n, errFull
	}
	f.n -= len(b)
	return len(b), nil
}

// TestEncodePNGWriteError: a failing writer's error comes back at every
// worker count, early or late in the stream (and the filterers stop: the
// test would hang otherwise).
func TestEncodePNGWriteError(t *testing.T) {
	img := noiseImage(500, 300, 10, true)
	total := len(stdPNG(t, img))
	for _, at := range []int{0, 10, 40000, total - 5} {
		for _, workers := range []int{1, 2, 4} {
			if err := encodePNG(&failAfter{n: at}, img, workers); !errors.Is(err, errFull) {
				t.Errorf("failing after %d bytes, %d workers: got %v, want the writer's error", at, workers, err)
			}
		}
	}
}

// FuzzEncodePNG: any opaque image (its size and pixels from the input)
// encodes to image/png's bytes with one worker and with three.
func FuzzEncodePNG(f *testing.F) {
	f.Add(uint8(3), uint8(70), []byte{1, 2, 3, 250, 128, 127, 0, 255})
	f.Add(uint8(40), uint8(1), []byte{9})
	f.Fuzz(func(t *testing.T, w, h uint8, pix []byte) {
		if w == 0 || h == 0 || len(pix) == 0 {
			return
		}
		img := image.NewRGBA(image.Rect(0, 0, int(w), int(h)))
		for i := range img.Pix {
			if i%4 == 3 {
				img.Pix[i] = 0xff
			} else {
				img.Pix[i] = pix[i%len(pix)] + byte(i/len(pix))
			}
		}
		want := stdPNG(t, img)
		for _, workers := range []int{1, 3} {
			if got := ourPNG(t, img, workers); !bytes.Equal(got, want) {
				t.Fatalf("%d×%d, %d workers: bytes differ from image/png's", w, h, workers)
			}
		}
	})
}

// BenchmarkEncodePNG encodes a sweep plot (goodput.png, 1600×1000) with
// image/png and with encodePNG at 1 and 2 workers.
func BenchmarkEncodePNG(b *testing.B) {
	res := readResults(b, "goodput.csv")
	f, _, err := Goodput(res, GoodputOptions{X: "workload.rate"})
	if err != nil {
		b.Fatal(err)
	}
	canvas, err := renderCanvas(f, "x.png", DefaultWidth, DefaultHeight, 1)
	if err != nil {
		b.Fatal(err)
	}
	img := canvas.(pngCanvas).img
	b.Run("image-png", func(b *testing.B) {
		for range b.N {
			stdPNG(b, img)
		}
	})
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "bands-1", 2: "bands-2"}[workers], func(b *testing.B) {
			for range b.N {
				ourPNG(b, img, workers)
			}
		})
	}
}

// BenchmarkDrawSweep draws a batching sweep's three plots (goodput,
// perception, provider-fit) into a fresh directory, on one worker and on
// two: rasterizing and encoding, what `servesim sweep` spends after the
// simulations.
func BenchmarkDrawSweep(b *testing.B) {
	csv := filepath.Join("testdata", "batching.csv")
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "j1", 2: "j2"}[workers], func(b *testing.B) {
			for range b.N {
				files, err := DrawSweep(b.TempDir(), csv, SweepOptions{SLO: SLO{TTFTms: 2000, TPOTms: 100}, Workers: workers})
				if err != nil || len(files) != 3 {
					b.Fatalf("DrawSweep: %v (%d files)", err, len(files))
				}
			}
		})
	}
}
