#!/usr/bin/env python3
"""Print the gmprt-vs-tokio table from a `cargo bench --bench scheduler` run.

Reads criterion's output, `<criterion dir>/<group>/<function>[/<parameter>]/new/`
(`benchmark.json` for the ids and throughput, `estimates.json` for the median), and prints
a markdown table: workload | gmprt median | tokio median | gmprt/tokio. Each median is the time
of one iteration, with the time per element (task, yield, round trip) beside it. Other peers
in the same group (std::thread in spawn_many_1k) get a second table.

Usage: python3 benches/summarize.py [CRITERION_DIR]
CRITERION_DIR defaults to $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else
<workspace>/target/criterion. Python 3 standard library only.
"""

import json
import os
import sys
from pathlib import Path

# Workloads in the order benches/scheduler.rs runs them, with what one element is.
WORKLOADS = {
    "spawn_many": "task",
    "spawn_many_1k": "task",
    "chained_spawn": "task",
    "yield_many": "yield",
    "ping_pong": "round trip",
    "fan_out_fan_in": "task",
}
BASE, PEER = "gmprt", "tokio"


def default_dir():
    if os.environ.get("CRITERION_HOME"):
        return Path(os.environ["CRITERION_HOME"])
    if os.environ.get("CARGO_TARGET_DIR"):
        return Path(os.environ["CARGO_TARGET_DIR"]) / "criterion"
    return Path(__file__).resolve().parent.parent / "target" / "criterion"


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def load(root):
    """{(group, value_str): {function: (median_ns, elements)}}"""
    runs = {}
    for bench_json in sorted(root.glob("**/new/benchmark.json")):
        est_json = bench_json.with_name("estimates.json")
        if not est_json.exists():
            continue
        meta = json.loads(bench_json.read_text())
        median = json.loads(est_json.read_text())["median"]["point_estimate"]
        elements = (meta.get("throughput") or {}).get("Elements")
        key = (meta["group_id"], meta.get("value_str"))
        runs.setdefault(key, {})[meta["function_id"]] = (median, elements)
    return runs


def cell(entry, unit):
    if entry is None:
        return "—"
    median, elements = entry
    text = fmt_time(median)
    if elements:
        text += f" ({fmt_time(median / elements)}/{unit})"
    return text


def order(group):
    names = list(WORKLOADS)
    return (names.index(group) if group in names else len(names), group)


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()
    if not root.is_dir():
        sys.exit(f"no criterion output at {root}: run `cargo bench --bench scheduler` first")
    runs = load(root)
    # Functions benched without a parameter (std_thread) belong to every procs row of the group.
    unparameterised = {g: fns for (g, v), fns in runs.items() if v is None}
    rows = sorted(
        ((g, v, fns) for (g, v), fns in runs.items() if v is not None and (BASE in fns or PEER in fns)),
        key=lambda r: (order(r[0]), r[1]),
    )
    if not rows:
        sys.exit(f"no gmprt/tokio results under {root}")

    print(f"Criterion medians from `{root}` (time per iteration; per element in brackets).")
    print("gmprt/tokio < 1 means gmprt was faster.\n")
    print(f"| workload | {BASE} median | {PEER} median | {BASE}/{PEER} |")
    print("|---|---|---|---|")
    others = []
    for group, value, fns in rows:
        unit = WORKLOADS.get(group, "element")
        base, peer = fns.get(BASE), fns.get(PEER)
        ratio = f"{base[0] / peer[0]:.2f}" if base and peer else "—"
        print(f"| {group} ({value}) | {cell(base, unit)} | {cell(peer, unit)} | {ratio} |")
        extra = {f: e for f, e in fns.items() if f not in (BASE, PEER)}
        extra.update(unparameterised.get(group, {}))
        for name, entry in sorted(extra.items()):
            others.append((group, value, name, entry, base, unit))

    if others:
        print(f"\n| workload | peer | peer median | peer/{BASE} |")
        print("|---|---|---|---|")
        for group, value, name, entry, base, unit in others:
            ratio = f"{entry[0] / base[0]:.1f}" if base else "—"
            print(f"| {group} ({value}) | {name} | {cell(entry, unit)} | {ratio} |")


if __name__ == "__main__":
    main()
