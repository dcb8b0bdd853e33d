#!/usr/bin/env bash
# Prepared in the 2026-11-27 evening session for the next GPU visit (not run: no machine was
# lent again): mapped I/O for small slot runs (62572e2) against main's binaries before it
# (5e9735e, devbin/base.tar.xz: option_screener, bench-offload, trading_desk), and against the
# same binary with GMPRT_CUDA_MAPPED_IO=off, all in one call.
# usage: bash devbin/exp2.sh LIMIT
set -u
FINAL=$OUT; T0=$SECONDS; LIMIT=$1
W=/tmp/resy; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p devbin && tar -C devbin -xJf devbin/gmprt-gpu-bin.tar.xz && tar -C devbin -xJf devbin/base.tar.xz
B=devbin/bin; O=devbin/basebin
{ echo "exp2.sh $(date -u +%FT%TZ) limit=$LIMIT"; sed -n 2p devbin/MANIFEST
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$W/session.txt"
pack() {
  cp "$W/session.txt" "$FINAL/.s" && mv "$FINAL/.s" "$FINAL/summary.txt"
  tar -C "$W" -cf - . | xz -T0 -3 > "$FINAL/.t" && mv "$FINAL/.t" "$FINAL/steps.tar.xz"
}
step() {  # step NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  local left=$((LIMIT - (SECONDS - T0) - 10))
  if [ "$left" -lt 10 ]; then echo "skipped $name: ${left}s left" >> "$W/session.txt"; return; fi
  [ "$to" -le "$left" ] || to=$left
  local t=$SECONDS
  { echo "\$ $*"; timeout "$to" "$@" 2>&1; echo "rc=$?"; } > "$W/$name.txt"
  echo "step $name: $((SECONDS - t)) s, $(tail -1 "$W/$name.txt")" >> "$W/session.txt"
  grep -E "^3\. one launch|^4\. 1000000|batch time|test result|small_runs|all ways agree|latency p50/p99|time:|p99 tick|revaluations" "$W/$name.txt" | head -12 >> "$W/session.txt"
  pack
}
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
echo "session done in $((SECONDS - T0)) s" >> "$W/session.txt"; pack
