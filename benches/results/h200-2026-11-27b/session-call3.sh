#!/usr/bin/env bash
# Night session 2026-11-27, call 3: SAXPY (554d6f6) and Black-Scholes (the commit after it) in
# 16-byte steps against 98ea83a's one-element kernels (devbin/base.tar.xz: explain and
# option_screener of 98ea83a), in interleaved rounds: explain --verify's kernel phase at 1M and
# 16M on this card's own profile (the one call 2 saved, offload/profiles/h200-measured-2026-11-27.json,
# which is the built-in default), ncu SpeedOfLight on both kernels, old and new, and the CUDA
# tests that cover both paths of each kernel.
# usage: bash benches/results/h200-2026-11-27b/session-call3.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start kernels-ab "$1"
if [ -d /usr/local/cuda/bin ]; then PATH=$PATH:/usr/local/cuda/bin; export PATH; fi
STEP_KEYS='test result|black_scholes_matches|saxpy_matches|^  kernel|gmprt_|Throughput|Duration|all ways agree|^[25]'
P=offload/profiles/h200-measured-2026-11-27.json
step cuda-tests 40 env GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 $B/test-offload-cuda --nocapture --test-threads=1
for r in 1 2 3; do
  for kn in saxpy:1000000 saxpy:16000000 black-scholes:1000000 black-scholes:16000000; do
    k=${kn%%:*} n=${kn##*:}
    for v in old new; do
      bin=$B/explain; [ $v = old ] && bin=$O/explain
      step "verify-$k-$n-$v-$r" 30 env GMPRT_DEVICE=cuda $bin --kernel $k --n $n --device $P --verify --out /tmp
    done
  done
done
if command -v ncu >/dev/null; then
  for v in old new; do
    bin=$B; [ $v = old ] && bin=$O
    step "ncu-bs-$v" 60 ncu --section SpeedOfLight -k regex:'gmprt_black_scholes$' --launch-count 2 \
      env GMPRT_DEVICE=cuda $bin/explain --kernel black-scholes --n 16000000 --device $P --verify --out /tmp
    step "ncu-saxpy-$v" 60 ncu --section SpeedOfLight -k regex:'gmprt_saxpy$' --launch-count 2 \
      env GMPRT_DEVICE=cuda $bin/explain --kernel saxpy --n 16000000 --device $P --verify --out /tmp
  done
else
  echo "no ncu on PATH" >> "$W/session.txt"
fi
for v in old new; do
  bin=$B; [ $v = old ] && bin=$O
  step "screener-$v" 40 env GMPRT_DEVICE=cuda $bin/option_screener --n 1e6 --ways 2,5
done
session_end
