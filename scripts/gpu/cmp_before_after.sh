#!/usr/bin/env bash
# One device call: the same benches from two builds, interleaved, on the GPU machine's 16 cores
# (issues 23 and 24; no GPU is used). Binaries are built here (the machine has no Rust):
#   devbin/cmp/old/{chan,net}  devbin/cmp/new/{chan,net}   (stripped `cargo bench --no-run` builds)
# and carried (`carry: ["devbin/cmp"]`). Writes $OUT/env.txt, $OUT/select.txt, $OUT/net-echo.txt
# and the net bench's JSON per build.
#   chan_select (benches/chan.rs): BENCH_PROCS 16 then 2, two rounds, old/new alternating.
#   net echo (benches/net.rs): 16 workers per side, 3 rounds of 3 s, gmprt against tokio in
#   each binary's own run; old then new.
#
# Environment: CMP_DIR (devbin/cmp) the folder of builds; CMP_BUILDS ("old new") the builds to
# interleave, each a subfolder; CMP_NET (1) 0 skips the net echo.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=$PWD/${CMP_DIR:-devbin/cmp}
BUILDS=${CMP_BUILDS:-old new}
{
  date -u; uname -a; nproc
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz' || true
  nvidia-smi -L 2>/dev/null || true
  cat "$B/MANIFEST" 2>/dev/null || true
  sha256sum "$B"/*/*
} > "$OUT/env.txt" 2>&1
work=$(mktemp -d) && cd "$work" || exit 1
for procs in 16 2; do
  for r in 1 2; do
    for v in $BUILDS; do
      echo "== procs=$procs round $r build $v"
      BENCH_PROCS=$procs timeout 120 "$B/$v/chan" --bench chan_select --noplot \
        --warm-up-time 1 --measurement-time 2 2>&1 | grep -E '^chan_select|time:|thrpt:'
    done
  done
done > "$OUT/select.txt" 2>&1
if [ "${CMP_NET:-1}" != 0 ]; then
  for v in $BUILDS; do
    echo "== build $v"
    timeout 150 "$B/$v/net" echo --procs 16 --rounds 3 --secs 3 --json "$OUT/net-echo-$v.json" 2>&1
  done > "$OUT/net-echo.txt" 2>&1
fi
echo "== summary"; grep -E '^== |time:' "$OUT/select.txt" | grep -v '%' | head -80
[ -f "$OUT/net-echo.txt" ] && grep -E 'echo +(round trips|p99|server CPU|cores busy)' "$OUT/net-echo.txt"
exit 0
