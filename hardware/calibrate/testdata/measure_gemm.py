#!/usr/bin/env python3
"""Time the per-layer GEMMs (and the residual add) of Llama-2-7B and
Llama-2-70B at TP 1, 2, 4, 8 on the local GPU, in BF16, the way Vidur's
mlp.csv profiles them (F.linear(x, W) with W of shape [N, K], one layer,
shapes already divided by TP), and write one CSV row per (model, tp, op,
tokens).

Usage: python3 measure_gemm.py OUT.csv   (WEIGHTS=zeros: all-zero weights)

h200_randn.csv and h200_zeros.csv beside this script are its output on an
H200 (2026-11-30), converted to servesim's native kernel-timing format
(time_us = prof_us; their header comments give the graph_us cross-check).

Two timings per shape, both medians:
  graph_us: 20 back-to-back calls captured in a CUDA graph; the graph is
            replayed 7 times (2 warm-up) and timed with CUDA events; the
            time per call (elapsed / 20). It includes the ~1 us gap between
            kernels in a graph.
  prof_us:  20 eager calls under torch.profiler (CUPTI kernel times, as
            Vidur's profiler uses); the summed device time of the kernels
            of each call (GEMM plus any split-K reduction), median over the
            20 calls. Empty if the profiler is unavailable.
"""
import csv
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

MODELS = {
    # name: (hidden, heads, kv_heads, head_dim, ffn) from the HF config.json
    "llama-2-7b": (4096, 32, 32, 128, 11008),
    "llama-2-70b": (8192, 64, 8, 128, 28672),
}
TPS = [1, 2, 4, 8]
TOKENS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 320, 384, 512,
          640, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096]
REPS = 20


def shapes(model, tp):
    h, nh, nkv, hd, ff = MODELS[model]
    return [
        ("qkv", h, (nh + 2 * nkv) * hd // tp),
        ("out_proj", nh * hd // tp, h),
        ("mlp_up", h, 2 * ff // tp),
        ("mlp_down", ff // tp, h),
    ]


def graph_time(fn):
    """Per-call seconds of fn, from a CUDA graph of REPS calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(REPS):
            fn()
    times = []
    for i in range(7):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        if i >= 2:
            times.append(a.elapsed_time(b) * 1e3 / REPS)  # ms -> us per call
    del g
    times.sort()
    return times[len(times) // 2]


def main():
    out = sys.argv[1]
    dev = torch.cuda.get_device_name(0)
    print("device:", dev, "torch", torch.__version__, flush=True)
    try:
        print(subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version",
                              "--format=csv"], capture_output=True, text=True).stdout, flush=True)
    except Exception as e:  # noqa
        print("nvidia-smi:", e)
    torch.manual_seed(0)
    rows = []
    t0 = time.time()

    # Gap anchor: a graph of tiny kernels.
    tiny = torch.zeros(1, device="cuda", dtype=torch.bfloat16)
    gap = graph_time(lambda: tiny.add_(1))
    print(f"tiny kernel in a graph: {gap:.2f} us per call", flush=True)
    rows.append(dict(model="-", tp=1, op="tiny_add", tokens=1, m=1, k=1, n=1, graph_us=f"{gap:.3f}", prof_us=""))

    for model in MODELS:
        h = MODELS[model][0]
        for tp in TPS:
            specs = shapes(model, tp)
            if os.environ.get("WEIGHTS") == "zeros":
                ws = {op: torch.zeros(n, k, device="cuda", dtype=torch.bfloat16) for op, k, n in specs}
            else:
                ws = {op: torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for op, k, n in specs}
            kmax = max(k for _, k, _ in specs)
            xs = {k: torch.randn(max(TOKENS), k, device="cuda", dtype=torch.bfloat16) for _, k, _ in specs}
            ra = torch.randn(max(TOKENS), h, device="cuda", dtype=torch.bfloat16)
            rb = torch.randn(max(TOKENS), h, device="cuda", dtype=torch.bfloat16)
            points = []
            for t in TOKENS:
                for op, k, n in specs:
                    x = xs[k][:t]
                    w = ws[op]
                    points.append((op, t, t, k, n, (lambda x=x, w=w: F.linear(x, w))))
                if tp == 1:
                    a, b = ra[:t], rb[:t]
                    points.append(("add", t, t, h, h, (lambda a=a, b=b: torch.add(a, b))))
            gt = {}
            for op, t, m, k, n, fn in points:
                gt[(op, t)] = graph_time(fn)
            pt = {}
            try:
                from torch.profiler import profile, ProfilerActivity, record_function
                for op, t, m, k, n, fn in points:
                    fn()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    for op, t, m, k, n, fn in points:
                        for r in range(REPS):
                            with record_function(f"pt|{op}|{t}|{r}"):
                                fn()
                        torch.cuda.synchronize()
                per = {}
                for e in prof.events():
                    if not e.name.startswith("pt|"):
                        continue
                    _, op, t, r = e.name.split("|")
                    d = getattr(e, "device_time_total", None)
                    if d is None:
                        d = e.cuda_time_total
                    per.setdefault((op, int(t)), []).append(d)
                for key, v in per.items():
                    v.sort()
                    pt[key] = v[len(v) // 2]
            except Exception as ex:  # noqa
                print("profiler failed:", repr(ex), flush=True)
            for op, t, m, k, n, fn in points:
                p = pt.get((op, t))
                rows.append(dict(model=model, tp=tp, op=op, tokens=t, m=m, k=k, n=n,
                                 graph_us=f"{gt[(op, t)]:.3f}", prof_us="" if p is None else f"{p:.3f}"))
            print(f"{model} tp{tp}: {len(points)} points, {time.time() - t0:.1f} s", flush=True)
            del ws, xs, ra, rb
            torch.cuda.empty_cache()

    with open(out, "w", newline="") as f:
        f.write(f"# measured by hardware/calibrate/testdata/measure_gemm.py on {dev}, torch {torch.__version__}, weights {os.environ.get('WEIGHTS', 'randn*0.02')}\n")
        w = csv.DictWriter(f, fieldnames=["model", "tp", "op", "tokens", "m", "k", "n", "graph_us", "prof_us"])
        w.writeheader()
        w.writerows(rows)
    print("wrote", out, len(rows), "rows", flush=True)
    for r in rows:
        if r["model"] == "llama-2-7b" and r["tp"] == 1 and r["tokens"] in (1, 16, 256, 4096):
            print(r)


if __name__ == "__main__":
    main()
