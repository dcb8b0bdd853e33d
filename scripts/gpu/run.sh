#!/usr/bin/env bash
# Issue 6's runs, on the GPU machine (binaries from scripts/gpu/build.sh in devbin/). Writes
# every raw output under $OUT (the device tool brings it back); commit it under
# benches/results/<gpu>/ with this script's name.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
run() { local name=$1; shift; echo "+ $*" | tee "$OUT/$name.txt"; timeout 300 "$@" >> "$OUT/$name.txt" 2>&1; echo "rc=$?" >> "$OUT/$name.txt"; }
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv >> "$OUT/nvidia-smi.txt" 2>&1
export GMPRT_DEVICE=cuda
# 1. CUDA tests (must run, not skip) and the rest of the offload/kernels suites.
for t in devbin/test-*; do run "$(basename "$t")" "$t" --nocapture --test-threads=1; done
# 2. Calibration -> the profile to commit as offload/profiles/<gpu>.json.
run calibrate devbin/explain --all --device cuda --save-profile "$OUT/profile.json" --out "$OUT"
# 4. The five-way table, the ladder, Monte Carlo.
run option_screener devbin/option_screener --n 1e6
run matmul_ladder devbin/matmul_ladder --n 4096 --naive-max 512
run monte_carlo_pi devbin/monte_carlo_pi --samples 1e9 --paths 1e8
# 6. Scheduler scaling on the 16 cores.
for p in 1 2 4 8 16; do run "million_tasks-p$p" devbin/million_tasks --procs "$p"; done
BENCH_PROCS=16 run bench-scheduler devbin/bench-scheduler --bench --warm-up-time 1 --measurement-time 3
run bench-offload devbin/bench-offload --bench --warm-up-time 1 --measurement-time 3
