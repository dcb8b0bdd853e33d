#!/usr/bin/env bash
# Prepared in the 2026-11-27 evening session for the next GPU visit (not run: no machine was
# lent again): mapped I/O for small slot runs (62572e2) against main's binaries before it
# (5e9735e, devbin/base.tar.xz: option_screener, bench-offload, trading_desk), and against the
# same binary with GMPRT_CUDA_MAPPED_IO=off, all in one call.
# usage (from the repository root, with devbin/gmprt-gpu-bin.tar.xz and devbin/base.tar.xz
# carried): bash benches/results/h100-2026-11-27b/session-call3-not-run.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start mapped-io-ab "$1"
STEP_KEYS='^3\. one launch|^4\. 1000000|batch time|test result|small_runs|all ways agree|latency p50/p99|time:|p99 tick|revaluations'
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
for r in 1 2 3; do
  step "way3-base-$r" 20 env GMPRT_DEVICE=cuda $O/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-new-$r" 20 env GMPRT_DEVICE=cuda $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
  step "way3-off-$r" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_MAPPED_IO=off $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
done
step "way3-new-spin" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_SYNC=spin $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
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
