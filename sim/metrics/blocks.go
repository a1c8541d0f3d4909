package metrics

// blocks holds a growing sample in blocks that are never copied as it
// grows: slices that double copy each value about once more (8 MB for
// the five latency samples of a 100k-request run, 4 % of its time), and
// keep up to twice the memory while they do. The first block holds 256
// values and each next one twice the last, up to maxBlock, so that a
// collector of a few requests (a class's) stays small.
type blocks[T any] [][]T

// maxBlock is the most values a block holds: 64 KiB of 8-byte values.
const maxBlock = 8192

// add appends v.
func (b *blocks[T]) add(v T) {
	bs := *b
	k := len(bs) - 1
	if k < 0 || len(bs[k]) == cap(bs[k]) {
		n := 256
		if k >= 0 {
			n = min(maxBlock, 2*cap(bs[k]))
		}
		bs = append(bs, make([]T, 0, n))
		k++
		*b = bs
	}
	bs[k] = append(bs[k], v)
}

// last returns the value added last, nil when there is none.
func (b blocks[T]) last() *T {
	if k := len(b) - 1; k >= 0 && len(b[k]) > 0 {
		return &b[k][len(b[k])-1]
	}
	return nil
}

// len returns the number of values.
func (b blocks[T]) len() int {
	n := 0
	for _, blk := range b {
		n += len(blk)
	}
	return n
}
