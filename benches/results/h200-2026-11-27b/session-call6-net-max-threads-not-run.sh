#!/usr/bin/env bash
# Prepared 2026-11-28 (fifth session, no device machine), revised in the sixth; NOT RUN. Does
# gmprt's third M cost it the 16-core echo target too (issue 25: echo >= 1.1x tokio, p99 <= 1.0x
# at 16 procs; 0.96x on the H100)? On the 2-core VM the third M (the one Go's startm starts for
# the P the M in netpoll released) kept the cores 0.94-0.97x as busy as tokio's. Since 9e04841,
# startm leaves queued work to an M without a P instead (runtime/src/sched/idle.rs, step 5):
# cores busy 1.00x, requests/s 0.93x -> 1.00x tokio (benches/README.md, "No third M"). This call
# compares the two on 16 cores: main's bench-net ($B, scripts/gpu/build.sh) against a build of
# d3711aa, the commit before, unpacked under $B0 (build it with `git worktree add /tmp/b0 d3711aa`
# and scripts/gpu/build.sh there; without $B0 only main runs). Interleaved sets, echo then http
# (where wrk is installed); the table's last column is the paired gmprt/tokio ratio with its 95%
# interval. ~3-5 min.
# usage: B0=/path/to/d3711aa/bin bash benches/results/h200-2026-11-27b/session-call6-net-max-threads-not-run.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start net-no-third-m "$1"
STEP_KEYS='^(echo|http) +(round trips|requests|p99|server|cores)|^note'
for r in 1 2; do
  for v in after before; do
    bin=$B/bench-net
    if [ $v = before ]; then
      [ -n "${B0:-}" ] && [ -x "$B0/bench-net" ] || continue
      bin=$B0/bench-net
    fi
    step "echo-$v-$r" 45 $bin echo --procs 16 --rounds 3 --secs 3 --json /tmp/echo.json
    # http needs wrk, which the GPU machines may not have (they reach no package registry).
    if command -v wrk >/dev/null; then
      step "http-$v-$r" 45 $bin http --procs 16 --rounds 3 --secs 3 --json /tmp/http.json
    fi
  done
done
session_end
