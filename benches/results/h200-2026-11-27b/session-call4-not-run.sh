#!/usr/bin/env bash
# Night session 2026-11-27, call 4, NOT RUN (no device machine was lent again): SAXPY with two
# 16-byte steps per iteration (saxpy-two-steps.patch beside this file, on top of 7adf4a4: apply
# it, then scripts/gpu/build.sh) against 7adf4a4's one step (devbin/base.tar.xz: explain of
# 7adf4a4 under basebin/),
# interleaved: explain --verify's kernel phase at 1M and 16M on the built-in H200 profile, ncu
# SpeedOfLight at 16M, and the CUDA tests.
# usage: bash benches/results/h200-2026-11-27b/session-call4.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start saxpy-unroll-ab "$1"
if [ -d /usr/local/cuda/bin ]; then PATH=$PATH:/usr/local/cuda/bin; export PATH; fi
STEP_KEYS='test result|^  kernel +predicted|gmprt_|DRAM Throughput|Duration'
P=offload/profiles/h200-measured-2026-11-27.json
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
for r in 1 2 3; do
  for n in 1000000 16000000; do
    for v in old new; do
      bin=$B/explain; [ $v = old ] && bin=$O/explain
      step "verify-saxpy-$n-$v-$r" 30 env GMPRT_DEVICE=cuda $bin --kernel saxpy --n $n --device $P --verify --out /tmp
    done
  done
done
if command -v ncu >/dev/null; then
  for v in old new; do
    bin=$B; [ $v = old ] && bin=$O
    step "ncu-saxpy-$v" 45 ncu --section SpeedOfLight -k regex:'gmprt_saxpy$' --launch-count 2 \
      env GMPRT_DEVICE=cuda $bin/explain --kernel saxpy --n 16000000 --device $P --verify --out /tmp
  done
fi
session_end
