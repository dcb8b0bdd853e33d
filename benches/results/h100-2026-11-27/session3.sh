#!/usr/bin/env bash
# The third device call of 2026-11-27 (H100 machine): the one-shot operations' reused events and
# slot-like wait (commit after 2eedb28). The CUDA harness, explain --verify on the committed H100
# profile, and the desk on the GPU placement, 24dceba's binary against this commit's, alternating.
# usage: bash devbin/session3.sh LIMIT
set -u
FINAL=$OUT; T0=$SECONDS; LIMIT=$1
W=/tmp/res3; rm -rf "$W"; mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p devbin && tar -C devbin -xJf devbin/gmprt-gpu-bin.tar.xz
B=devbin/bin
{ echo "session3.sh $(date -u +%FT%TZ) limit=$LIMIT"; sed -n 2p devbin/MANIFEST
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
  pack
}
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
step verify 60 env GMPRT_DEVICE=cuda $B/explain --all --device offload/profiles/h100-measured-2026-11-27.json --verify --out "$W/img-verify"
for r in 1 2; do for b in base new; do
  if [ $b = base ]; then bin=devbin/base/trading_desk; else bin=$B/trading_desk; fi
  step "desk-gpu-$b-$r" 40 env GMPRT_DEVICE=cuda $bin --contracts 1e6 --ticks 25000 --placement gpu --rate 5000
done; done
echo "session done in $((SECONDS - T0)) s" >> "$W/session.txt"; pack
