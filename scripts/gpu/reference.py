#!/usr/bin/env python3
"""Same-machine reference figures through PyTorch, for gmprt's calibrated profile to be read
against (scripts/gpu/ref_fractions.py):

  h2d_pinned_gbps / d2h_pinned_gbps   pinned host <-> device copy of 256 MiB (non_blocking)
  d2d_gbps                            1 GiB device-to-device copy, bytes moved = read + write
  d2d_copy_gbps                       the same copy counted once (bytes copied / time)
  sgemm_fp32_tflops / sgemm_tf32_tflops   torch.mm, N = 4096, 2N^3 flops
  empty_launch_sync_us                an empty kernel launch + torch.cuda.synchronize()

Each figure: CUDA events (wall clock for launch + synchronize), a warm-up first, the median of
--reps runs. Prints the JSON and writes it to --out. Without torch or a CUDA device it prints
"skipped: no torch/CUDA (<reason>)", writes {"skipped": ...} and exits 0: the dry run on a
machine without a GPU is not a failure.
"""
import argparse
import json
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="reference.json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--scale", choices=["full", "small", "smallest"], default="full",
                    help="full: the sizes above; small/smallest shrink them (dry runs only)")
    a = ap.parse_args()

    reason = None
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        reason = f"cannot import torch: {e.__class__.__name__}: {e}"
    else:
        if not torch.cuda.is_available():
            reason = f"torch {torch.__version__} sees no CUDA device (torch.version.cuda={torch.version.cuda})"
    if reason:
        res = {"skipped": f"no torch/CUDA ({reason})"}
        print(f"skipped: no torch/CUDA ({reason})")
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2)
        return 0

    shrink = {"full": 1, "small": 16, "smallest": 256}[a.scale]
    mib = 1 << 20
    copy_bytes = 256 * mib // shrink
    d2d_bytes = 1024 * mib // shrink
    n = 4096 // {"full": 1, "small": 4, "smallest": 16}[a.scale]
    reps = a.reps
    dev = torch.device("cuda")

    def timed(fn, warm=3):
        """Median seconds of fn() between two CUDA events, after `warm` warm-up runs."""
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        return statistics.median(ts), min(ts)

    res = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "driver_capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
        "scale": a.scale,
        "reps": reps,
        "method": "CUDA events around each op, warm-up first, median of reps",
    }

    # Pinned H2D / D2H.
    host = torch.empty(copy_bytes, dtype=torch.uint8).pin_memory()
    devbuf = torch.empty(copy_bytes, dtype=torch.uint8, device=dev)
    t, _ = timed(lambda: devbuf.copy_(host, non_blocking=True))
    res["h2d_bytes"] = copy_bytes
    res["h2d_pinned_gbps"] = copy_bytes / t / 1e9
    t, _ = timed(lambda: host.copy_(devbuf, non_blocking=True))
    res["d2h_bytes"] = copy_bytes
    res["d2h_pinned_gbps"] = copy_bytes / t / 1e9
    del host, devbuf

    # Device-to-device copy.
    src = torch.empty(d2d_bytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    t, _ = timed(lambda: dst.copy_(src))
    res["d2d_bytes"] = d2d_bytes
    res["d2d_copy_gbps"] = d2d_bytes / t / 1e9
    res["d2d_gbps"] = 2 * d2d_bytes / t / 1e9
    del src, dst

    # SGEMM FP32 and TF32.
    A = torch.randn(n, n, device=dev, dtype=torch.float32)
    B = torch.randn(n, n, device=dev, dtype=torch.float32)
    C = torch.empty(n, n, device=dev, dtype=torch.float32)
    flops = 2.0 * n ** 3
    res["sgemm_n"] = n
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    t, _ = timed(lambda: torch.mm(A, B, out=C))
    res["sgemm_fp32_tflops"] = flops / t / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    t, _ = timed(lambda: torch.mm(A, B, out=C))
    res["sgemm_tf32_tflops"] = flops / t / 1e12
    torch.backends.cuda.matmul.allow_tf32 = old
    del A, B, C

    # Empty kernel launch + synchronize (wall clock: the host waits for it).
    e = torch.zeros(1, device=dev)
    for _ in range(50):
        e.add_(1)
    torch.cuda.synchronize()
    ts = []
    for _ in range(max(reps, 200)):
        t0 = time.perf_counter()
        e.add_(1)  # one tiny kernel (a 0-element op would launch nothing)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    res["empty_launch_sync_us"] = statistics.median(ts) * 1e6
    res["empty_launch_sync_note"] = "torch 1-element add_ + synchronize, wall clock, median of 200"

    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print("reference " + json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
