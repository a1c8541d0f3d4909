package plots

import (
	"bytes"
	"errors"
	"hash/adler32"
	"image"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// stdPNG is image/png's encoding of img.
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

// samePixels fails t unless data is a PNG file image/png decodes to img's
// pixels (decoding checks the zlib stream's Adler-32 and every chunk's CRC).
func samePixels(t testing.TB, name string, data []byte, img *image.RGBA) {
	t.Helper()
	got, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: decoding: %v", name, err)
	}
	b := img.Bounds()
	if got.Bounds().Dx() != b.Dx() || got.Bounds().Dy() != b.Dy() {
		t.Fatalf("%s: decoded %v, want %v", name, got.Bounds(), b)
	}
	g0 := got.Bounds().Min
	for y := range b.Dy() {
		for x := range b.Dx() {
			r1, g1, b1, a1 := got.At(g0.X+x, g0.Y+y).RGBA()
			r2, g2, b2, a2 := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				t.Fatalf("%s: pixel (%d, %d) decodes to %v, want %v", name, x, y, got.At(g0.X+x, g0.Y+y), img.At(b.Min.X+x, b.Min.Y+y))
			}
		}
	}
}

// TestEncodePNGPixels: encodePNG's files decode to the image's pixels for
// opaque images of many shapes (one row, one column, a block and a row,
// a plot's size, blocks of one row and of exactly pngBlockRows), with the
// same bytes at every worker count; images image/png writes with alpha
// go to png.Encode (its very bytes).
func TestEncodePNGPixels(t *testing.T) {
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
	}{"20001x2", noiseImage(20001, 2, 12, false)}, struct {
		name string
		img  *image.RGBA
	}{"70x128 two whole blocks", noiseImage(70, 2*pngBlockRows, 13, false)}, struct {
		name string
		img  *image.RGBA
	}{"70x129 a block of one row", noiseImage(70, 2*pngBlockRows+1, 14, true)})
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
		one := ourPNG(t, c.img, 1)
		if !c.img.Opaque() {
			if want := stdPNG(t, c.img); !bytes.Equal(one, want) {
				t.Errorf("%s: %d bytes, not image/png's %d", c.name, len(one), len(want))
			}
		} else {
			samePixels(t, c.name, one, c.img)
		}
		for _, workers := range []int{0, 2, 3, 8} {
			if got := ourPNG(t, c.img, workers); !bytes.Equal(got, one) {
				t.Errorf("%s, %d workers: %d bytes differ from one worker's %d", c.name, workers, len(got), len(one))
			}
		}
	}
}

// TestAdler32Combine: the combined checksum is the checksum of the
// concatenation, for splits at every place in short inputs and in ones
// longer than the modulus 65521 (where len(b) mod 65521 wraps).
func TestAdler32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 17, 300, 65521, 65522, 200000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
			if n > 1000 && i%3 == 0 {
				data[i] = 0xff // long runs of large bytes push the sums near the modulus
			}
		}
		want := adler32.Checksum(data)
		cuts := []int{0, n / 2, n}
		if n <= 300 {
			cuts = cuts[:0]
			for i := 0; i <= n; i++ {
				cuts = append(cuts, i)
			}
		}
		for _, c := range cuts {
			if got := adler32Combine(adler32.Checksum(data[:c]), adler32.Checksum(data[c:]), n-c); got != want {
				t.Errorf("%d bytes cut at %d: combined %08x, want %08x", n, c, got, want)
			}
		}
	}
}

// TestSavedPlotPixels: a sweep plot's file decodes to the canvas's image,
// is the same bytes on one worker and on two, and is within 1 % of
// image/png's size (the blocks' fresh starts cost little).
func TestSavedPlotPixels(t *testing.T) {
	res := readResults(t, "goodput.csv")
	f, _, err := Goodput(res, GoodputOptions{X: "workload.rate"})
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for _, workers := range []int{1, 2} {
		path := filepath.Join(t.TempDir(), "goodput.png")
		canvas, err := renderCanvas(f, path, DefaultWidth, DefaultHeight, workers)
		if err != nil {
			t.Fatal(err)
		}
		img := canvas.(pngCanvas).img
		var got bytes.Buffer
		if _, err := canvas.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		samePixels(t, "goodput.png", got.Bytes(), img)
		if first == nil {
			first = got.Bytes()
			if std := len(stdPNG(t, img)); float64(len(first)) > 1.01*float64(std) {
				t.Errorf("goodput.png: %d bytes, over 1 %% more than image/png's %d", len(first), std)
			}
		} else if !bytes.Equal(got.Bytes(), first) {
			t.Errorf("%d workers: the plot's PNG differs from one worker's", workers)
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
	total := len(ourPNG(t, img, 1))
	for _, at := range []int{0, 10, 40000, total - 5} {
		for _, workers := range []int{1, 2, 4} {
			if err := encodePNG(&failAfter{n: at}, img, workers); !errors.Is(err, errFull) {
				t.Errorf("failing after %d bytes, %d workers: got %v, want the writer's error", at, workers, err)
			}
		}
	}
}

// FuzzEncodePNG: any opaque image (its size and pixels from the input)
// encodes to a file that decodes to its pixels, the same bytes with one
// worker and with three.
func FuzzEncodePNG(f *testing.F) {
	f.Add(uint8(3), uint8(70), []byte{1, 2, 3, 250, 128, 127, 0, 255})
	f.Add(uint8(40), uint8(1), []byte{9})
	f.Add(uint8(5), uint8(200), []byte{7, 7, 7, 7, 8})
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
		one := ourPNG(t, img, 1)
		samePixels(t, "fuzz", one, img)
		if got := ourPNG(t, img, 3); !bytes.Equal(got, one) {
			t.Fatalf("%d×%d: three workers' bytes differ from one's", w, h)
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
		b.Run(map[int]string{1: "blocks-1", 2: "blocks-2"}[workers], func(b *testing.B) {
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
