package plots

// encodePNG writes the opaque RGBA images the plots draw as the very bytes
// image/png's Encode writes for them (truecolor, 8 bits, default
// compression), with the rows' filtering (two thirds of the encoding's
// CPU in a sweep's plots) spread over several goroutines in bands while
// one goroutine deflates the filtered rows in order.
//
// It follows image/png's writer (Go's src/image/png/writer.go): the same
// header and IHDR, each row's filter chosen by the same heuristic (the
// smallest sum of the filtered bytes read as signed, filters tried in the
// order Up, Paeth, None, Sub, Average, the first smallest kept), the
// rows written one Write each to a zlib writer at DefaultCompression over
// a 32 KiB bufio.Writer whose every flush is one IDAT chunk. A row's
// filter depends only on that row and the one above, so bands filter
// independently and the deflated stream is the same. Images image/png
// would encode otherwise (a pixel not opaque) go to png.Encode.

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// pngBandRows is how many rows a band holds: 32 rows of a 1600-pixel
// image are 154 KB of filtered bytes, so a 1000-row image has 32 bands.
const pngBandRows = 32

// PNG filter types (PNG specification, section 9.2).
const (
	ftNone = iota
	ftSub
	ftUp
	ftAverage
	ftPaeth
)

// encodePNG writes img to w as png.Encode does, filtering rows on up to
// workers goroutines (≤ 1: on the caller's alone, band after band).
func encodePNG(w io.Writer, img *image.RGBA, workers int) error {
	b := img.Bounds()
	width, height := b.Dx(), b.Dy()
	if width <= 0 || height <= 0 || int64(width) >= 1<<31/3 || int64(height) >= 1<<32 || !img.Opaque() {
		return png.Encode(w, img)
	}
	cw := &chunkWriter{w: w}
	cw.write([]byte("\x89PNG\r\n\x1a\n"))
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:4], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:8], uint32(height))
	ihdr[8] = 8 // bits per sample
	ihdr[9] = 2 // truecolor; compression, filter and interlace methods 0
	cw.chunk("IHDR", ihdr[:])
	bw := bufio.NewWriterSize(idatWriter{cw}, 1<<15)
	zw, err := zlib.NewWriterLevel(bw, zlib.DefaultCompression)
	if err != nil {
		return err
	}
	rowLen := 1 + 3*width
	err = filterBands(img, workers, func(band []byte) error {
		for len(band) > 0 {
			if _, err := zw.Write(band[:rowLen]); err != nil {
				return err
			}
			band = band[rowLen:]
		}
		return nil
	})
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return err
	}
	cw.chunk("IEND", nil)
	return cw.err
}

// filterBands filters img's rows band by band and calls emit with each
// band's filtered rows (each a filter type byte and 3 bytes a pixel), in
// order; emit must not keep the slice. With workers > 1 the bands are
// filtered on that many goroutines, at most 2·workers bands ahead of emit.
func filterBands(img *image.RGBA, workers int, emit func([]byte) error) error {
	width, height := img.Bounds().Dx(), img.Bounds().Dy()
	rowLen := 1 + 3*width
	nb := (height + pngBandRows - 1) / pngBandRows
	if workers <= 1 || nb == 1 {
		f := newRowFilter(width)
		buf := make([]byte, pngBandRows*rowLen)
		for k := range nb {
			if err := emit(f.band(img, k, buf)); err != nil {
				return err
			}
		}
		return nil
	}
	workers = min(workers, nb)
	free := make(chan []byte, 2*workers)
	for range cap(free) {
		free <- make([]byte, pngBandRows*rowLen)
	}
	done := make([]chan struct{}, nb)
	for k := range done {
		done[k] = make(chan struct{})
	}
	filtered := make([][]byte, nb)
	quit := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newRowFilter(width)
			for {
				// A buffer first, then a band: the band emit waits for is
				// always held by a filterer that has its buffer.
				var buf []byte
				select {
				case buf = <-free:
				case <-quit:
					return
				}
				k := int(next.Add(1) - 1)
				if k >= nb {
					return
				}
				filtered[k] = f.band(img, k, buf)
				close(done[k])
			}
		}()
	}
	var err error
	for k := range nb {
		<-done[k]
		if err = emit(filtered[k]); err != nil {
			break
		}
		free <- filtered[k][:cap(filtered[k])]
	}
	close(quit)
	wg.Wait()
	return err
}

// rowFilter is one goroutine's row buffers: cr[0] the current row
// unfiltered, cr[f] its bytes under filter f (each with its filter type
// first), pr the row above.
type rowFilter struct {
	cr           [5][]byte
	pr           []byte
	eqUp, eqLeft []bool // filterRow's marks, one a span of a row
}

func newRowFilter(width int) *rowFilter {
	spans := (3*width + filterSpan - 1) / filterSpan
	f := &rowFilter{pr: make([]byte, 1+3*width), eqUp: make([]bool, spans), eqLeft: make([]bool, spans)}
	for i := range f.cr {
		f.cr[i] = make([]byte, 1+3*width)
		f.cr[i][0] = byte(i)
	}
	return f
}

// band filters band k of img into buf and returns the filtered rows.
func (f *rowFilter) band(img *image.RGBA, k int, buf []byte) []byte {
	height := img.Bounds().Dy()
	rowLen := len(f.pr)
	y0, y1 := k*pngBandRows, min((k+1)*pngBandRows, height)
	if y0 == 0 {
		clear(f.pr)
	} else {
		rgbRow(img, y0-1, f.pr[1:])
	}
	out := buf[:(y1-y0)*rowLen]
	for y := y0; y < y1; y++ {
		rgbRow(img, y, f.cr[0][1:])
		ft := filterRow(&f.cr, f.pr, f.eqUp, f.eqLeft)
		copy(out[(y-y0)*rowLen:], f.cr[ft])
		f.pr, f.cr[0] = f.cr[0], f.pr
		f.cr[0][0] = ftNone
	}
	return out
}

// rgbRow writes row y of img (relative to its bounds) as 3 bytes a pixel.
func rgbRow(img *image.RGBA, y int, dst []byte) {
	pix := img.Pix[y*img.Stride : y*img.Stride+4*img.Bounds().Dx()]
	for i, j := 0, 0; j < len(pix); i, j = i+3, j+4 {
		dst[i], dst[i+1], dst[i+2] = pix[j], pix[j+1], pix[j+2]
	}
}

// abs8 is |d| for d read as a signed byte (without a branch).
func abs8(d byte) int {
	x := int(int8(d))
	m := x >> (strconv.IntSize - 1)
	return (x ^ m) - m
}

// paeth is the Paeth predictor of a (left), b (above) and c (above left).
func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := abs(p-int(a)), abs(p-int(b)), abs(p-int(c))
	if pa <= pb && pa <= pc {
		return a
	}
	if pb <= pc {
		return b
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// filterRow fills cr[f] for the filters it needs and returns the one whose
// bytes, read as signed, have the smallest sum of magnitudes: tried in
// image/png's order (Up, Paeth, None, Sub, Average), the first smallest
// kept. A filter's sum stops once it reaches the best so far (that filter
// cannot be chosen, so its bytes need not be whole).
//
// The row goes in spans of filterSpan bytes, and a span equal to the one
// above (or to itself shifted one pixel left) is filtered at once: there
// Up's bytes are 0, and so are Paeth's when the pixel to the span's left
// equals the one above it too (a = c makes the predictor the byte above),
// Sub's when the span equals its left shift, and Average's when both hold.
// Most of a plot's rows are such spans (a white or flat background).
func filterRow(cr *[5][]byte, pr []byte, eqUp, eqLeft []bool) int {
	const bpp = 3
	cur, up, sub, avg, pae := cr[ftNone][1:], cr[ftUp][1:], cr[ftSub][1:], cr[ftAverage][1:], cr[ftPaeth][1:]
	prev := pr[1:]
	n := len(cur)

	// Up, and which spans equal the span above (eqUp) or their left shift
	// (eqLeft; the first span's first pixel has no left neighbour).
	spans := len(eqUp)
	sum := 0
	for k := range spans {
		i0, i1 := k*filterSpan, min((k+1)*filterSpan, n)
		eqUp[k] = string(cur[i0:i1]) == string(prev[i0:i1])
		if eqUp[k] {
			clear(up[i0:i1])
		} else {
			for i := i0; i < i1; i++ {
				up[i] = cur[i] - prev[i]
				sum += abs8(up[i])
			}
		}
		eqLeft[k] = i0 >= bpp && string(cur[i0:i1]) == string(cur[i0-bpp:i1-bpp])
	}
	best, choice := sum, ftUp

	// Paeth: its first pixel predicts from the byte above alone.
	sum = 0
	for i := 0; i < bpp && i < n; i++ {
		pae[i] = cur[i] - prev[i]
		sum += abs8(pae[i])
	}
	for k := 0; k < spans && sum < best; k++ {
		i0, i1 := max(k*filterSpan, bpp), min((k+1)*filterSpan, n)
		if eqUp[k] && k > 0 && (eqUp[k-1] || string(cur[i0-bpp:i0]) == string(prev[i0-bpp:i0])) {
			clear(pae[i0:i1])
			continue
		}
		for i := i0; i < i1; i++ {
			// Where the left neighbour equals the one above it (a = c),
			// the predictor is the byte above (p = b, so pb = 0 and
			// pa = pc): the Up filter's byte.
			if a := cur[i-bpp]; a == prev[i-bpp] {
				pae[i] = up[i]
			} else {
				pae[i] = cur[i] - paeth(a, prev[i], prev[i-bpp])
			}
			sum += abs8(pae[i])
		}
	}
	if sum < best {
		best, choice = sum, ftPaeth
	}

	sum = 0
	for i := 0; i < n && sum < best; i++ {
		sum += abs8(cur[i])
	}
	if sum < best {
		best, choice = sum, ftNone
	}

	sum = 0
	for i := 0; i < bpp && i < n; i++ {
		sub[i] = cur[i]
		sum += abs8(sub[i])
	}
	for k := 0; k < spans && sum < best; k++ {
		i0, i1 := max(k*filterSpan, bpp), min((k+1)*filterSpan, n)
		if eqLeft[k] {
			clear(sub[i0:i1])
			continue
		}
		for i := i0; i < i1; i++ {
			sub[i] = cur[i] - cur[i-bpp]
			sum += abs8(sub[i])
		}
	}
	if sum < best {
		best, choice = sum, ftSub
	}

	sum = 0
	for i := 0; i < bpp && i < n; i++ {
		avg[i] = cur[i] - prev[i]/2
		sum += abs8(avg[i])
	}
	for k := 0; k < spans && sum < best; k++ {
		i0, i1 := max(k*filterSpan, bpp), min((k+1)*filterSpan, n)
		if eqUp[k] && eqLeft[k] {
			// cur[i] = prev[i] = cur[i-bpp]: (c + c)/2 = c.
			clear(avg[i0:i1])
			continue
		}
		for i := i0; i < i1; i++ {
			avg[i] = cur[i] - byte((int(cur[i-bpp])+int(prev[i]))/2)
			sum += abs8(avg[i])
		}
	}
	if sum < best {
		choice = ftAverage
	}
	return choice
}

// filterSpan is the span filterRow compares at once (bytes).
const filterSpan = 48

// chunkWriter writes PNG chunks (length, type, data, CRC of type and data)
// and keeps the first error.
type chunkWriter struct {
	w   io.Writer
	err error
}

func (c *chunkWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

func (c *chunkWriter) chunk(name string, data []byte) {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], name)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var foot [4]byte
	binary.BigEndian.PutUint32(foot[:], crc.Sum32())
	c.write(head[:])
	c.write(data)
	c.write(foot[:])
}

// idatWriter writes each Write as one IDAT chunk (the bufio.Writer above it
// sizes them, as image/png's does).
type idatWriter struct{ c *chunkWriter }

func (w idatWriter) Write(b []byte) (int, error) {
	w.c.chunk("IDAT", b)
	if w.c.err != nil {
		return 0, w.c.err
	}
	return len(b), nil
}
