#!/usr/bin/env bash
# Prepared 2026-11-28 (seventh session, no device machine); NOT RUN. Does the wakep hold (idle.rs
# step 6, 39db81a) take the deferral storm off the spawner's path on 16 cores, as it did on 2?
# Since 9e04841, a `startm` for queued work that finds no parked M leaves its P to an M without
# one (step 5); before 39db81a, every spawn in the window before that M's re-arm or park took
# `sched` to defer once more (on 2 cores: up to 13,335 of 13,462 startms in one cold 2-P run;
# after: at most 18 in 15 rounds). This call runs million_tasks, main ($B) against a build of
# cab8335, the commit before the hold, as devbin/base.tar.xz (its bin/ renamed basebin/: build it
# with `git worktree add /tmp/b0 cab8335` and scripts/gpu/build.sh there), at 1, 2, 4, 8, 16 Ps,
# cold then --warm, in 3 interleaved rounds with the order alternating. Read: ns per task (issue
# 25: no more at 16 Ps than at 1), startm_deferred, startm_submit, unparks per 1k tasks (<= 5),
# steal attempts per task (<= 1) and tasks per steal (>= 8), per build. ~2 min.
# usage (from the repository root, with devbin/gmprt-gpu-bin.tar.xz and devbin/base.tar.xz
# carried): bash benches/results/h200-2026-11-27b/session-call7-wakep-hold-not-run.sh LIMIT
set -u
. scripts/gpu/session-lib.sh
session_start wakep-hold-ab "$1"
STEP_KEYS='ns per task|^counters'
for mode in cold warm; do
  w=; [ $mode = warm ] && w=--warm
  for r in 1 2 3; do
    for p in 1 2 4 8 16; do
      if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
      for v in $order; do
        d=$B; [ $v = base ] && d=$O
        [ -x "$d/million_tasks" ] || continue
        step "mt-$mode-$r-p$p-$v" 30 $d/million_tasks --procs $p $w
      done
    done
  done
done
session_end
