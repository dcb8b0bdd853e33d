#!/usr/bin/env bash
# The second device call of 2026-11-27 (H100 machine), after this session's changes: the CUDA
# tests of the changed kernel, the desk, an A/B of spawn+join (24dceba's million_tasks against
# this commit's, same run), the scaling curve with peers, echo at 16 procs, spread with 4M
# batches without ncu, and the Batcher's 10x1 latency case. Each step has its own timeout, all
# inside LIMIT seconds; $OUT/summary.txt and $OUT/steps.tar.xz are refreshed after every step.
# usage: bash devbin/session2.sh LIMIT
set -u
FINAL=$OUT; T0=$SECONDS; LIMIT=$1
W=/tmp/res2; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p devbin && tar -C devbin -xJf devbin/gmprt-gpu-bin.tar.xz
B=devbin/bin
{ echo "session2.sh $(date -u +%FT%TZ) commit $(git rev-parse HEAD 2>/dev/null) limit=$LIMIT"
  sed -n 2p devbin/MANIFEST; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$W/session.txt"
pack() {
  cat "$W/session.txt" > "$FINAL/.s" && mv "$FINAL/.s" "$FINAL/summary.txt"
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
  pack
}
ab() {  # base (24dceba) and new million_tasks, interleaved, 3 rounds
  for r in 1 2 3; do for p in 1 2 4 8 16; do for b in base new; do
    if [ $b = base ]; then bin=devbin/base/million_tasks; else bin=$B/million_tasks; fi
    printf '%s p=%s r=%s ' $b $p $r
    $bin --tasks 1e6 --procs $p 2>&1 | grep -oE "^[0-9.]+ ns per task|counters: .*" | tr '\n' ' '
    echo
  done; done; done
}
export -f ab; export B
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
step kernels-segmented 20 env GMPRT_DEVICE=cuda $B/test-kernels-segmented
OUT=$W GMPRT_STAGE_BUDGET=100 bash scripts/gpu/run.sh 6-desk > "$W/6-desk.log" 2>&1; echo "stage 6-desk rc=$?" >> "$W/session.txt"; pack
step ab 90 bash -c ab
step scaling 60 bash scripts/scaling.sh --bin $B --tasks 1e6 --rounds 3 --go $B/million_tasks_go
step echo 45 $B/bench-net echo --procs 16 --secs 3 --rounds 3 --conns 1000 --json "$W/bench-net.json"
step spread-4m 30 env GMPRT_DEVICE=cuda $B/spread --devices all --items 16e6 --max-batch 4194304
step spread-1m 30 env GMPRT_DEVICE=cuda $B/spread --devices all --items 16e6 --max-batch 1048576
step submit-10x1 40 env BENCH_PROCS=16 $B/bench-offload --bench --warm-up-time 0.5 --measurement-time 2 offload_submitters/10x1
echo "session done in $((SECONDS - T0)) s" >> "$W/session.txt"; pack
