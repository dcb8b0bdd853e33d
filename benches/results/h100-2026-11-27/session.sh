#!/usr/bin/env bash
# One device call: the stages named, in order, each under its own budget, all inside LIMIT
# seconds; results combined after every stage into $OUT/summary.txt + $OUT/stages.tar.xz.
# Stage x-submit (not in run.sh): the criterion group offload_submitters at BENCH_PROCS=16
# (gmprt's Batcher against the 30-line tokio batcher, same run).
# usage: bash devbin/session.sh LIMIT stage:budget ...
set -u
FINAL=$OUT; T0=$SECONDS; LIMIT=$1; shift
W=/tmp/res; mkdir -p "$W"
echo "session.sh $(date -u +%FT%TZ) commit $(git rev-parse HEAD 2>/dev/null) limit=$LIMIT stages: $*" > "$W/session.txt"
for sb in "$@"; do
  s=${sb%%:*}; b=${sb##*:}
  left=$((LIMIT - (SECONDS - T0) - 15))
  if [ "$left" -lt 30 ]; then echo "skipped $s: ${left}s left" >> "$W/session.txt"; continue; fi
  [ "$b" -le "$left" ] || b=$left
  t=$SECONDS
  if [ "$s" = x-submit ]; then
    { echo "\$ BENCH_PROCS=16 devbin/bin/bench-offload --bench --warm-up-time 0.5 --measurement-time 2 offload_submitters"
      BENCH_PROCS=16 timeout "$b" devbin/bin/bench-offload --bench --warm-up-time 0.5 --measurement-time 2 offload_submitters 2>&1
      echo "rc=$?"; } > "$W/x-submit.txt"
    rc=0
  else
    OUT=$W GMPRT_STAGE_BUDGET=$b bash scripts/gpu/run.sh "$s"; rc=$?
  fi
  echo "stage $s budget=${b}s took $((SECONDS - t))s rc=$rc" >> "$W/session.txt"
  cat "$W/session.txt" "$W"/*-summary.txt > "$FINAL/.s" && mv "$FINAL/.s" "$FINAL/summary.txt"
  tar -C "$W" -cf - . | xz -T0 -3 > "$FINAL/.t" && mv "$FINAL/.t" "$FINAL/stages.tar.xz"
done
echo "session done in $((SECONDS - T0))s" >> "$FINAL/summary.txt"
