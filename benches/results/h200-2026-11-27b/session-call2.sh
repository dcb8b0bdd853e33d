#!/usr/bin/env bash
# Night session 2026-11-27, call 2: mapped runs with two events (7070f64) against 6cda715's
# four (devbin/base.tar.xz: option_screener of 6cda715) and against copies
# (GMPRT_CUDA_MAPPED_IO=off); the fixed mapped-I/O test; a full calibration on this card,
# which now measures the mapped fits (98ea83a) and times the CPU side as called, saved as a
# profile; explain --verify on it, all kernels at their default n and small mapped sizes.
# usage (from the repository root, with devbin/gmprt-gpu-bin.tar.xz and devbin/base.tar.xz
# carried): bash benches/results/h200-2026-11-27b/session-call2.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start mapped-calibrate "$1"
STEP_KEYS='^3\. one launch|batch time|test result|small_runs|all ways agree|predicted|profile saved|[a-z-]+: n = |  Verdict:|  crossover,'
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
for r in 1 2 3; do
  step "way3-4ev-$r" 20 env GMPRT_DEVICE=cuda $O/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-2ev-$r" 20 env GMPRT_DEVICE=cuda $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-off-$r" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_MAPPED_IO=off $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
done
step calibrate 260 env GMPRT_DEVICE=cuda $B/explain --all --device cuda --save-profile "$SESSION_OUT/profile.json" --out /tmp/img
if [ -f "$SESSION_OUT/profile.json" ]; then
  step verify-all 90 env GMPRT_DEVICE=cuda $B/explain --all --device "$SESSION_OUT/profile.json" --verify --out /tmp/imgv
  for kn in black-scholes:64 black-scholes:1365 saxpy:5461; do
    k=${kn%%:*} n=${kn##*:}
    step "verify-$k-$n" 20 env GMPRT_DEVICE=cuda $B/explain --kernel $k --n $n --device "$SESSION_OUT/profile.json" --verify --out /tmp
  done
fi
session_end
