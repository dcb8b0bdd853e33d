#!/usr/bin/env bash
# Night session 2026-11-27, call 1: mapped I/O for small slot runs (62572e2, switch d8d753b) on
# a card for the first time, against main's binaries before it (5e9735e, devbin/base.tar.xz:
# option_screener, bench-offload, trading_desk) and against the same binary with
# GMPRT_CUDA_MAPPED_IO=off, all in one call; then explain --verify at sizes under and over the
# 64 KiB mapped limit, mapped and not, so the cost model can price mapped runs from measurements.
# usage (from the repository root, with devbin/gmprt-gpu-bin.tar.xz and devbin/base.tar.xz
# carried): bash benches/results/h200-2026-11-27b/session-call1.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start mapped-io-ab "$1"
STEP_KEYS='^3\. one launch|batch time|test result|small_runs|all ways agree|latency p50/p99|time:|p99 tick|revaluations|predicted|device:'
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
for r in 1 2 3; do
  step "way3-base-$r" 20 env GMPRT_DEVICE=cuda $O/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-new-$r" 20 env GMPRT_DEVICE=cuda $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-off-$r" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_MAPPED_IO=off $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
done
step "way3-new-spin" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_SYNC=spin $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
step "way3-off-spin" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_SYNC=spin GMPRT_CUDA_MAPPED_IO=off $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
P=offload/profiles/h100-measured-2026-11-27.json
# Black-Scholes: 48 B in + out per option, so n <= 1365 maps; saxpy: 12 B, n <= 5461.
for kn in black-scholes:1 black-scholes:64 black-scholes:1024 black-scholes:1365 black-scholes:1366 saxpy:1024 saxpy:5461 saxpy:16384; do
  k=${kn%%:*} n=${kn##*:}
  for io in on off; do
    step "verify-$k-$n-$io" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_MAPPED_IO=$io $B/explain --kernel $k --n $n --device $P --verify --out /tmp
  done
done
step screener-all 40 env GMPRT_DEVICE=cuda $B/option_screener --n 1e6 --per-launch-cap 20000
for v in base new; do
  bin=$B/bench-offload; [ $v = base ] && bin=$O/bench-offload
  step "submit-$v" 45 env GMPRT_DEVICE=cuda BENCH_PROCS=16 $bin --bench --warm-up-time 0.5 --measurement-time 2 'offload_submitters/(gmprt|tokio)/(1000x1000|100x100|10x1)'
done
for r in 1 2; do for v in base new; do
  bin=$B/trading_desk; [ $v = base ] && bin=$O/trading_desk
  step "desk-gpu-$v-$r" 30 env GMPRT_DEVICE=cuda $bin --contracts 1e6 --ticks 25000 --placement gpu --rate 5000
done; done
session_end
