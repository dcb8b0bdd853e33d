#!/usr/bin/env python3
# (Not named fractions.py: that would shadow the standard library module statistics imports.)
"""gmprt's calibrated figures as fractions of the same machine's PyTorch reference figures.

  python3 scripts/gpu/ref_fractions.py reference.json profile.json

reference.json: scripts/gpu/reference.py. profile.json: `explain --device cuda --save-profile`
(the DeviceProfile of offload/src/model/profile.rs: launch_sync, h2d/d2h.pinned LinFit with
slope = s/B, kernels[].device LinFit with slope = s per work unit, size Items{in_bytes,
out_bytes} or MatrixN with work = 2N^3 flops). Each line: gmprt's figure (fit: the top
regime's 1/slope; best: the fastest raw sample), the reference, and the fraction. What either
file lacks is skipped with a line saying so.
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:
        print(f"cannot read {path}: {e}")
        return None


def rate(fit):
    """1/slope of a LinFit's top regime (units per second), or None."""
    s = (fit or {}).get("slope")
    return 1.0 / s if s and s > 0 else None


def best(samples, per_x=1.0):
    """Fastest raw sample: max(x * per_x / secs), or None."""
    v = [s["x"] * per_x / s["secs"] for s in samples or [] if s.get("secs", 0) > 0]
    return max(v) if v else None


def line(what, ours, ref, unit, scale=1.0, lower_is_better=False):
    if ref is None:
        print(f"{what:<44} skipped: no reference figure")
        return
    if ours is None:
        print(f"{what:<44} skipped: not in the profile")
        return
    o = ours * scale
    frac = (ref / o) if lower_is_better else (o / ref)
    print(f"{what:<44} gmprt {o:10.3f} {unit:<8} reference {ref:10.3f} {unit:<8} fraction {frac:6.2f}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    ref, prof = load(sys.argv[1]), load(sys.argv[2])
    if ref is None or prof is None:
        print("skipped: a file is missing")
        return 0
    if "skipped" in ref:
        print(f"skipped: the reference was not measured ({ref['skipped']})")
        return 0
    print(f"profile: {prof.get('device')} ({prof.get('kind')}, driver {prof.get('driver')}); "
          f"reference: {ref.get('device')} (torch {ref.get('torch')}, CUDA {ref.get('cuda')})")
    if prof.get("kind") != "cuda":
        print(f"note: the profile's kind is {prof.get('kind')!r}, not 'cuda': the fractions compare unlike things")
    G = 1e-9
    for d in ("h2d", "d2h"):
        t = prof.get(d) or {}
        r = ref.get(f"{d}_pinned_gbps")
        line(f"{d.upper()} pinned, fit (1/slope)", rate(t.get("pinned")), r, "GB/s", G)
        line(f"{d.upper()} pinned, best sample", best(t.get("pinned_samples")), r, "GB/s", G)
    d2d = ref.get("d2d_gbps")
    kernels = {k["name"]: k for k in prof.get("kernels", [])}
    for name in ("saxpy", "black_scholes"):
        k = kernels.get(name)
        if not k or "Items" not in k.get("size", {}):
            print(f"{name + ' bytes/s vs D2D copy':<44} skipped: not in the profile")
            continue
        it = k["size"]["Items"]
        per = it["in_bytes"] + it["out_bytes"]
        line(f"{name} kernel, fit, bytes moved vs D2D", rate(k.get("device")) and rate(k["device"]) * per, d2d, "GB/s", G)
        line(f"{name} kernel, best sample vs D2D", best(k.get("device_samples"), per), d2d, "GB/s", G)
    k = kernels.get("sgemm")
    if k:
        for prec in ("fp32", "tf32"):
            r = ref.get(f"sgemm_{prec}_tflops")
            line(f"sgemm, fit vs torch {prec.upper()}", rate(k.get("device")), r, "TFLOP/s", 1e-12)
            line(f"sgemm, best sample vs torch {prec.upper()}", best(k.get("device_samples")), r, "TFLOP/s", 1e-12)
    else:
        print(f"{'sgemm':<44} skipped: not in the profile")
    ls = prof.get("launch_sync")
    line("empty launch + sync (fraction = ref/gmprt)", ls, ref.get("empty_launch_sync_us"), "us", 1e6,
         lower_is_better=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
