package plots

import (
	"bufio"
	"fmt"
	"git.sr.ht/~sbinet/gg"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// SLO holds latency objectives in milliseconds; 0 means not set.
type SLO struct {
	TTFTms, TPOTms, E2Ems float64
}

// IsSet reports whether any objective is set.
func (s SLO) IsSet() bool { return s.TTFTms > 0 || s.TPOTms > 0 || s.E2Ems > 0 }

// Override returns s with the objectives o sets (> 0) replacing its own.
func (s SLO) Override(o SLO) SLO {
	if o.TTFTms > 0 {
		s.TTFTms = o.TTFTms
	}
	if o.TPOTms > 0 {
		s.TPOTms = o.TPOTms
	}
	if o.E2Ems > 0 {
		s.E2Ems = o.E2Ems
	}
	return s
}

func (s SLO) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"ttft", s.TTFTms}, {"tpot", s.TPOTms}, {"e2e", s.E2Ems}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("SLO %s %v ms: must be a finite number >= 0 (0 = not set)", f.name, f.v)
		}
	}
	return nil
}

// String describes the set objectives: "TTFT ≤ 500 ms, TPOT ≤ 50 ms".
func (s SLO) String() string {
	var parts []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"TTFT", s.TTFTms}, {"TPOT", s.TPOTms}, {"E2E", s.E2Ems}} {
		if f.v > 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %s ms", f.name, num(f.v)))
		}
	}
	if len(parts) == 0 {
		return "no SLO"
	}
	return strings.Join(parts, ", ")
}

// Drawer draws itself on a canvas: *plot.Plot and *Figure are Drawers.
type Drawer interface {
	Draw(draw.Canvas)
}

var (
	_ Drawer = (*plot.Plot)(nil)
	_ Drawer = (*Figure)(nil)
)

// Figure is several plots on one canvas: a title over a grid of panels
// whose data areas are aligned (plot.Align).
type Figure struct {
	Title   string
	Caption string         // small text under the panels (definitions, notes); may hold newlines
	Panels  [][]*plot.Plot // rows of panels; every row has the same length and no nil panel
}

// Draw draws the title and the panels on c, filled white first.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	f.drawOnWhite(c)
}

// drawOnWhite is Draw on a canvas that is white already (drawMargin's).
func (f *Figure) drawOnWhite(c draw.Canvas) {
	if f.Title != "" {
		sty := textStyle(titleSize + 2)
		sty.XAlign = draw.XCenter
		sty.YAlign = draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - vg.Points(6)}, f.Title)
		c.Max.Y -= sty.Rectangle(f.Title).Size().Y + vg.Points(14)
	}
	if f.Caption != "" {
		sty := textStyle(noteSize)
		sty.Color = grey
		sty.XAlign = draw.XLeft
		sty.YAlign = draw.YBottom
		c.FillText(sty, vg.Point{X: c.Min.X + vg.Points(10), Y: c.Min.Y + vg.Points(4)}, f.Caption)
		c.Min.Y += sty.Rectangle(f.Caption).Size().Y + vg.Points(10)
	}
	rows := len(f.Panels)
	if rows == 0 {
		return
	}
	tiles := draw.Tiles{
		Rows: rows, Cols: len(f.Panels[0]),
		PadX: vg.Points(24), PadY: vg.Points(22),
		PadLeft: vg.Points(8), PadRight: vg.Points(12), PadBottom: vg.Points(6),
	}
	for _, row := range f.Panels {
		for _, p := range row {
			settleAxes(p)
		}
	}
	canvases := plot.Align(f.Panels, tiles, c)
	for j, row := range f.Panels {
		for i, p := range row {
			p.Draw(canvases[j][i])
		}
	}
}

// DefaultWidth and DefaultHeight are the default image size in pixels.
const (
	DefaultWidth  = 1600
	DefaultHeight = 1000
)

// DPI is the resolution Save draws PNGs at: gonum's vgimg default, 96 dots
// per inch. A vg.Length is a point, 1/72 inch, so n pixels are n·72/96
// points.
const DPI = vgimg.DefaultDPI

// Length returns the vg.Length that is px pixels at DPI, for callers that
// save with (*plot.Plot).Save: p.Save(plots.Length(1600), plots.Length(1000),
// "x.png") writes a 1600×1000 image.
func Length(px int) vg.Length { return vg.Length(px) * vg.Inch / DPI }

// Save draws d into path, widthPx × heightPx pixels at DPI; the format
// follows the extension: .png (the exact pixel size), .svg or .pdf (the same
// size in points). The file is written under a temporary name and renamed,
// so it is whole or absent.
func Save(d Drawer, path string, widthPx, heightPx int) error {
	canvas, err := renderCanvas(d, path, widthPx, heightPx, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	return writeCanvas(canvas, path)
}

// renderCanvas draws d on a canvas of path's format (Save's first half: the
// rasterizing, for a PNG; writeCanvas encodes and writes it).
func renderCanvas(d Drawer, path string, widthPx, heightPx, workers int) (vg.CanvasWriterTo, error) {
	if widthPx <= 0 || heightPx <= 0 {
		return nil, fmt.Errorf("plots: %s: image size %d×%d: want positive pixels", path, widthPx, heightPx)
	}
	if widthPx > 20000 || heightPx > 20000 {
		return nil, fmt.Errorf("plots: %s: image size %d×%d: at most 20000 pixels a side", path, widthPx, heightPx)
	}
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var canvas vg.CanvasWriterTo
	switch ext {
	case "png":
		// The context draws on img itself: vgimg.UseImage would have
		// gg.NewContextForImage copy img into a new image (a copy of
		// every pixel of a blank canvas, about a fifth of a sweep's
		// plotting). The context is set up as vgimg.NewWith sets up its
		// own: butt line caps, y up.
		img := getRGBA(widthPx, heightPx)
		ctx := gg.NewContextForRGBA(img)
		ctx.SetLineCapButt()
		ctx.InvertY()
		c := vgimg.NewWith(vgimg.UseImageWithContext(img, ctx), vgimg.UseDPI(DPI))
		drawMargin(d, draw.New(c), false) // vgimg.NewWith filled img white
		canvas = pngCanvas{c, img, workers}
	case "svg", "pdf":
		c, err := draw.NewFormattedCanvas(Length(widthPx), Length(heightPx), ext)
		if err != nil {
			return nil, fmt.Errorf("plots: %s: %v", path, err)
		}
		drawMargin(d, draw.New(c), true)
		canvas = c
	default:
		return nil, fmt.Errorf("plots: %s: unknown image format %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
	}
	return canvas, nil
}

// pngCanvas writes its image with encodePNG: the same bytes on any workers, the rows
// filtered on up to workers goroutines.
type pngCanvas struct {
	*vgimg.Canvas
	img     *image.RGBA
	workers int
}

// WriteTo writes the PNG; the image goes back to rgbaPool after, so a
// pngCanvas is written once.
func (c pngCanvas) WriteTo(w io.Writer) (int64, error) {
	defer rgbaPool.Put(c.img)
	cw := &countWriter{w: w}
	bw := bufio.NewWriter(cw)
	if err := encodePNG(bw, c.img, c.workers); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

// rgbaPool holds the images of written PNGs for the next canvas: a sweep's
// plots are all one size, and a fresh 1600×1000 image is 6.4 MB of memory
// touched for the first time (about half the page faults of a sweep).
var rgbaPool sync.Pool

// getRGBA returns a w×h image from rgbaPool, or a new one; its pixels are
// whatever they were (vgimg.NewWith fills the canvas).
func getRGBA(w, h int) *image.RGBA {
	if img, ok := rgbaPool.Get().(*image.RGBA); ok && img.Rect == image.Rect(0, 0, w, h) {
		return img
	}
	return image.NewRGBA(image.Rect(0, 0, w, h))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// writeCanvas encodes canvas into path under a temporary name and renames
// it, so the file is whole or absent.
func writeCanvas(canvas vg.CanvasWriterTo, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := canvas.WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("plots: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("plots: writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

// drawMargin draws d inside a margin of 8 points, on c filled white first
// when fill is set (a vector canvas; a PNG canvas starts white).
func drawMargin(d Drawer, c draw.Canvas, fill bool) {
	if fill {
		c.SetColor(color.White)
		c.Fill(c.Rectangle.Path())
	}
	m := vg.Points(8)
	if p, ok := d.(*plot.Plot); ok {
		settleAxes(p)
	}
	c = draw.Crop(c, m, -m, m, -m)
	if f, ok := d.(*Figure); ok {
		f.drawOnWhite(c) // filling white again would only repaint it (a tenth of rasterizing)
		return
	}
	d.Draw(c)
}

// Font sizes in points (1600×1000 px is 1200×750 pt: 11 pt is about 15 px).
const (
	titleSize  = 15
	labelSize  = 13
	tickSize   = 11
	legendSize = 11
	noteSize   = 10
)

func textStyle(size float64) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, vg.Points(size)),
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a plot with the package's fonts, a title, axis labels
// and a light grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = nil // the canvas is white already (drawMargin, Figure.Draw)
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(labelSize)
		a.Tick.Label.Font.Size = vg.Points(tickSize)
		a.Label.Padding = vg.Points(4)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(legendSize)
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.Top = true
	p.Legend.Padding = vg.Points(1)
	g := plotter.NewGrid()
	g.Vertical.Color = gridColor
	g.Horizontal.Color = gridColor
	p.Add(g)
	return p
}

var (
	gridColor = color.Gray{Y: 225}
	grey      = color.Gray{Y: 110}
	sloRed    = color.RGBA{R: 200, G: 30, B: 30, A: 255}
)

// seriesColors is the Okabe–Ito colour-blind-safe palette (M. Okabe and
// K. Ito, "Color Universal Design", 2008; https://jfly.uni-koeln.de/color/),
// black moved last.
var seriesColors = []color.Color{
	color.RGBA{R: 0, G: 114, B: 178, A: 255},   // blue
	color.RGBA{R: 213, G: 94, B: 0, A: 255},    // vermillion
	color.RGBA{R: 0, G: 158, B: 115, A: 255},   // bluish green
	color.RGBA{R: 204, G: 121, B: 167, A: 255}, // reddish purple
	color.RGBA{R: 230, G: 159, B: 0, A: 255},   // orange
	color.RGBA{R: 86, G: 180, B: 233, A: 255},  // sky blue
	color.RGBA{R: 0, G: 0, B: 0, A: 255},       // black
	color.RGBA{R: 240, G: 228, B: 66, A: 255},  // yellow
}

// seriesColor returns curve i's colour; after eight the colours repeat
// (with a different glyph, see seriesGlyph).
func seriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{},
	draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

func seriesGlyph(i int) draw.GlyphDrawer { return glyphs[(i/len(seriesColors)+i)%len(glyphs)] }

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}

// vline is a vertical line across the data area at X, with a legend
// thumbnail; it widens the x range to include X but leaves y alone. With
// Top in (0, 1) it stops at that fraction of the height (below a legend).
type vline struct {
	X float64
	draw.LineStyle
	Top float64
}

func (l vline) Plot(c draw.Canvas, p *plot.Plot) {
	if l.X < p.X.Min || l.X > p.X.Max {
		return
	}
	x, _ := p.Transforms(&c)
	top := c.Max.Y
	if l.Top > 0 && l.Top < 1 {
		top = c.Min.Y + vg.Length(l.Top)*(c.Max.Y-c.Min.Y)
	}
	c.StrokeLine2(l.LineStyle, x(l.X), c.Min.Y, x(l.X), top)
}

func (l vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.X, l.X, math.Inf(1), math.Inf(-1)
}

func (l vline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}

// hline is a horizontal line across the data area at Y.
type hline struct {
	Y float64
	draw.LineStyle
}

func (l hline) Plot(c draw.Canvas, p *plot.Plot) {
	if l.Y < p.Y.Min || l.Y > p.Y.Max {
		return
	}
	_, y := p.Transforms(&c)
	c.StrokeLine2(l.LineStyle, c.Min.X, y(l.Y), c.Max.X, y(l.Y))
}

func (l hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), l.Y, l.Y
}

func (l hline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}

// note is text placed at a fraction (0..1) of the data area, anchored by
// its alignment.
type note struct {
	FX, FY float64
	Text   string
	Style  text.Style
}

func (n note) Plot(c draw.Canvas, _ *plot.Plot) {
	pt := vg.Point{X: c.Min.X + vg.Length(n.FX)*(c.Max.X-c.Min.X), Y: c.Min.Y + vg.Length(n.FY)*(c.Max.Y-c.Min.Y)}
	c.FillText(n.Style, pt, n.Text)
}

func newNote(fx, fy float64, s string, xa draw.XAlignment, ya draw.YAlignment) note {
	sty := textStyle(noteSize)
	sty.Color = grey
	sty.XAlign, sty.YAlign = xa, ya
	return note{FX: fx, FY: fy, Text: s, Style: sty}
}

// pointLabels writes a text label beside each point, placed at draw time
// clear of the labels already placed: right-above the point, else
// right-below, left-above, left-below; a label that fits nowhere is left
// out, and none leaves the data area. Points of one colour at the same place
// share one label ("128, 256").
type pointLabels struct {
	xys    plotter.XYs
	text   []string
	colors []color.Color
}

// add adds labels for points, in a colour.
func (l *pointLabels) add(xys plotter.XYs, texts []string, clr color.Color) {
	at := map[plotter.XY]int{}
	for i, p := range xys {
		if j, ok := at[p]; ok {
			l.text[j] += ", " + texts[i]
			continue
		}
		at[p] = len(l.xys)
		l.xys = append(l.xys, p)
		l.text = append(l.text, texts[i])
		l.colors = append(l.colors, clr)
	}
}

func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var placed []vg.Rectangle
	gap := vg.Points(4)
	for i, t := range l.text {
		pt := vg.Point{X: trX(l.xys[i].X), Y: trY(l.xys[i].Y)}
		if !c.Contains(pt) {
			continue
		}
		sty := textStyle(noteSize)
		sty.Color = l.colors[i]
		w, h := sty.Width(t), sty.Height(t)
		for _, off := range []vg.Point{{X: gap, Y: gap}, {X: gap, Y: -gap - h}, {X: -gap - w, Y: gap}, {X: -gap - w, Y: -gap - h}} {
			r := vg.Rectangle{Min: pt.Add(off), Max: pt.Add(off).Add(vg.Point{X: w, Y: h})}
			if r.Min.X < c.Min.X || r.Max.X > c.Max.X || r.Min.Y < c.Min.Y || r.Max.Y > c.Max.Y || overlaps(r, placed) {
				continue
			}
			placed = append(placed, r)
			sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
			c.FillText(sty, r.Min, t)
			break
		}
	}
}

func overlaps(r vg.Rectangle, rs []vg.Rectangle) bool {
	for _, o := range rs {
		if r.Min.X < o.Max.X && o.Min.X < r.Max.X && r.Min.Y < o.Max.Y && o.Min.Y < r.Max.Y {
			return true
		}
	}
	return false
}

// finiteXYs keeps the points whose coordinates are finite (and positive on
// a log axis), and returns their indices in xys.
func finiteXYs(xys plotter.XYs, logX, logY bool) (plotter.XYs, []int) {
	var out plotter.XYs
	var kept []int
	for i, p := range xys {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) ||
			(logX && p.X <= 0) || (logY && p.Y <= 0) {
			continue
		}
		out = append(out, p)
		kept = append(kept, i)
	}
	return out, kept
}
