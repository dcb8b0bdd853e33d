#!/usr/bin/env bash
# Diagnostic call (2026-11-27, second H100 session): way 3 (one launch per task, max_batch 1,
# in_flight 2) under each GMPRT_CUDA_SYNC mode, 3 rounds interleaved, on main's binaries (5e9735e).
# Question: how much of the 30 µs batch time (p50) is the slot's wait falling from its 20 µs
# spin into a blocking sleep?
set -u
FINAL=$OUT; T0=$SECONDS; LIMIT=$1
W=/tmp/resx; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p devbin && tar -C devbin -xJf devbin/gmprt-gpu-bin.tar.xz
B=devbin/bin
{ echo "exp1.sh $(date -u +%FT%TZ) limit=$LIMIT"; sed -n 2p devbin/MANIFEST
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
  grep -E "^3\. one launch|batch time|latency p50" "$W/$name.txt" | head -3 >> "$W/session.txt"
  pack
}
for r in 1 2 3; do for m in auto spin blocking; do
  step "way3-$m-$r" 20 env GMPRT_DEVICE=cuda GMPRT_CUDA_SYNC=$m $B/option_screener --n 1e6 --per-launch-cap 20000 --ways 3
done; done
step cuda-launch-costs 30 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1 launch
echo "session done in $((SECONDS - T0)) s" >> "$W/session.txt"; pack
