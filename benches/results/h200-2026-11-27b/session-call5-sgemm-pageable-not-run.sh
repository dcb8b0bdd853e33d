#!/usr/bin/env bash
# Prepared 2026-11-28 (fifth session, no device machine), NOT RUN: where SGEMM's pageable H2D
# fit goes wrong. Call 2's `explain --verify` on the H200 measured SGEMM 1024's H2D (A and B,
# 4 MiB each, copied from the caller's Vecs) 43% under the profile's pageable fit, which the
# calibration took from one 4 MiB .. 64 MiB Vec through an m x 1 by 1 x 1 product
# (offload/src/calibrate/measure.rs, `copies`): 7.7-10 GB/s there, ~15.6 GB/s in verify.
# The suspect: verify's operands are small enough to stay in the host's last-level cache
# between runs (and A and B are the same Vec), where the calibration's large sizes are not.
# If so, the error shrinks as n grows past the cache: 2 x 4 B x n^2 is 8 MiB at 1024, 32 MiB at
# 2048, 128 MiB at 4096. Main's binaries only (scripts/gpu/build.sh); ~2-3 min.
# usage: bash benches/results/h200-2026-11-27b/session-call5-sgemm-pageable-not-run.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start sgemm-pageable "$1"
STEP_KEYS='^  (H2D|D2H|kernel|GPU total|CPU on [0-9]+ Ps) +predicted'
P=offload/profiles/h200-measured-2026-11-27.json
for r in 1 2; do
  for n in 256 512 1024 2048 4096; do
    step "verify-sgemm-$n-$r" 60 env GMPRT_DEVICE=cuda $B/explain --kernel sgemm --n $n --device $P --verify --out /tmp
  done
done
session_end
