package hardware

import (
	"fmt"
	"sort"
)

// SendRecv is a measured table of NCCL point-to-point transfer times by
// message size: what a pipeline stage's activations cost to reach the
// next stage. Size is in bytes, ascending; Sec the matching seconds.
//
// The built-in tables (SendRecvTable) come from Vidur's profiling
// (../shared/data/vidur-profiling/network/<node>/send_recv.csv: the
// median NCCL send/recv kernel time of 10 back-to-back launches, 2 KiB to
// 64 MiB; see its SOURCE.md), grouped into quarter-octave bins of size,
// each bin one point: its mean size and the median of its times (the raw
// grid, 993 sizes at 8 KiB steps, is noisy at the small end).
// TestSendRecvTablesFromVidur rebuilds them from the CSVs and requires the
// embedded points (sendrecv_table.go, regenerated with -update).
type SendRecv struct {
	Name string    // which measurement: "h100_dgx intra-node" …
	Size []float64 // bytes
	Sec  []float64 // seconds
}

// Time returns the seconds a message of bytes takes: linear interpolation
// between the table's points; below the first point its time (the fixed
// cost dominates there), above the last the last segment's slope carries
// on (the link's bandwidth). 0 bytes cost 0.
func (t *SendRecv) Time(bytes float64) float64 {
	if bytes <= 0 || len(t.Size) == 0 {
		return 0
	}
	n := len(t.Size)
	if bytes <= t.Size[0] || n == 1 {
		return t.Sec[0]
	}
	i := sort.SearchFloat64s(t.Size, bytes) // first point ≥ bytes
	if i >= n {
		i = n - 1
	}
	x0, x1, y0, y1 := t.Size[i-1], t.Size[i], t.Sec[i-1], t.Sec[i]
	return y0 + (y1-y0)*(bytes-x0)/(x1-x0)
}

// Validate checks the table: at least one point, sizes ascending and > 0,
// times finite and > 0.
func (t *SendRecv) Validate() error {
	if len(t.Size) == 0 || len(t.Size) != len(t.Sec) {
		return fmt.Errorf("hardware: send/recv table %q: %d sizes and %d times (want ≥ 1, equal)", t.Name, len(t.Size), len(t.Sec))
	}
	for i := range t.Size {
		if !(t.Size[i] > 0) || (i > 0 && !(t.Size[i] > t.Size[i-1])) {
			return fmt.Errorf("hardware: send/recv table %q: size %g at point %d must be > 0 and above the previous", t.Name, t.Size[i], i)
		}
		if !(t.Sec[i] > 0 && t.Sec[i] < 1) {
			return fmt.Errorf("hardware: send/recv table %q: time %g s at point %d must be in (0, 1)", t.Name, t.Sec[i], i)
		}
	}
	return nil
}

// SendRecvTable returns the measured table for a stage boundary on g:
// inside one node (NVLink) or across nodes (the scale-out network). Vidur
// measured an 8×A100-80GB DGX (a100_dgx) and an 8×H100 DGX (h100_dgx);
// within a node with two GPUs of the node (devices_per_node 2), across
// nodes with one GPU on each of two nodes (devices_per_node 1), which is
// how Vidur's own PP model picks them. The A100 GPUs take the A100 tables;
// every other GPU takes the H100 ones, the closest measured generation (no
// other GPU's send/recv is measured here: on B200/GB200 NVLink 5 the
// intra-node figure is pessimistic, on PCIe GPUs optimistic).
func SendRecvTable(g *GPU, crossNode bool) *SendRecv {
	a100 := g != nil && (g.Name == "a100" || g.Name == "a100-pcie")
	switch {
	case a100 && crossNode:
		return &sendRecvA100Inter
	case a100:
		return &sendRecvA100Intra
	case crossNode:
		return &sendRecvH100Inter
	}
	return &sendRecvH100Intra
}
