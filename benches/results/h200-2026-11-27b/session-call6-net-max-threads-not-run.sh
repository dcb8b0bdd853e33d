#!/usr/bin/env bash
# Prepared 2026-11-28 (fifth session, no device machine), NOT RUN: does gmprt's third M cost it
# the 16-core echo target too (issue 25: echo >= 1.1x tokio, p99 <= 1.0x at 16 procs; 0.96x on
# the H100)? On the 2-core VM, gmprt's HTTP server kept 0.95-0.99x the cores tokio's kept busy,
# and 0.99-1.00x with --gmprt-max-threads 2 (benches/README.md, "Sleeps and idle cores"): the M
# blocked in netpoll holds no P, so a P it releases is run by one more M. Interleaved sets,
# default against the cap at procs, echo then http (where wrk is installed), main's bench-net
# (scripts/gpu/build.sh); ~2-4 min. Capped, the runtime warns on stderr for every startm the cap
# refuses (hundreds a second on 2 cores): the step files will be long, and xz packs them small.
# usage: bash benches/results/h200-2026-11-27b/session-call6-net-max-threads-not-run.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start net-max-threads "$1"
STEP_KEYS='^(echo|http) +(round trips|requests|p99|server|cores)|^note'
for r in 1 2; do
  for v in default cap16; do
    cap=(); [ $v = cap16 ] && cap=(--gmprt-max-threads 16)
    step "echo-$v-$r" 45 $B/bench-net echo --procs 16 --rounds 3 --secs 3 "${cap[@]}" --json /tmp/echo.json
    # http needs wrk, which the GPU machines may not have (they reach no package registry).
    if command -v wrk >/dev/null; then
      step "http-$v-$r" 45 $B/bench-net http --procs 16 --rounds 3 --secs 3 "${cap[@]}" --json /tmp/http.json
    fi
  done
done
session_end
