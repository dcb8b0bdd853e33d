#!/usr/bin/env bash
# System calls and CPU per request of each side's HTTP server (benches/net.rs: tokio and gmprt,
# the same hyper service), one side at a time under the same wrk load, counted by `perf stat`
# on the server process alone (its threads, not wrk's). Where benches/net says which server
# costs more per request, this says whether the difference is in the kernel (more reads that
# find nothing, more epoll_waits, more futex wake-ups) or in user space.
#
#   bash scripts/net-syscalls.sh [--rounds R] [--secs S] [--procs P] [--conns C] [--bin NET]
#
# --bin: an already built net bench (a build of another commit, for a before/after pair).
# --clock: count clock reads too (libc's clock_gettime, which std's Instant::now and tokio's
# clock call) with a uprobe (root). Each hit traps into the kernel, so in these runs the CPU
# figures are the probe's, not the server's: take them from runs without --clock.
#
# Each round runs both sides, the order alternating (tokio first in odd rounds), each for a 1-s
# warm-up and then S seconds counted. Prints one line per run (every counted call per request,
# CPU per request, split into user and system time from /proc) and the medians. Needs perf (tracepoints: root, or perf_event_paranoid <= 1)
# and wrk; builds the net bench if it is not built.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 secs=5 procs=2 conns=64 bin= clock=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --secs) secs=${2:?}; shift 2 ;;
    --procs) procs=${2:?}; shift 2 ;;
    --conns) conns=${2:?}; shift 2 ;;
    --bin) bin=${2:?}; shift 2 ;;
    --clock) clock=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "net-syscalls.sh: unknown argument '$1' (known: --rounds, --secs, --procs, --conns, --bin, --clock)" >&2; exit 2 ;;
  esac
done
for tool in perf wrk python3; do
  command -v "$tool" >/dev/null || { echo "net-syscalls.sh: needs $tool" >&2; exit 2; }
done

[ -n "$bin" ] || bin=$(cargo bench --bench net --no-run --locked --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "net" and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || { echo "net-syscalls.sh: no net bench to run (--bin '$bin' is not an executable, or the build failed)" >&2; exit 1; }

# The calls a server makes per request: reads, writes, polls, wake-ups. raw_syscalls counts all.
events=raw_syscalls:sys_enter
for c in read recvfrom write writev sendto epoll_wait epoll_pwait epoll_ctl futex sched_yield; do
  events+=",syscalls:sys_enter_$c"
done
events+=",context-switches,task-clock"
# Clock reads (--clock): a uprobe on the libc the server links (kept if already placed).
if [ "$clock" = 1 ]; then
  libc=$(ldd "$bin" | awk '/libc\.so/ { print $3 }')
  if [ -n "$libc" ] && { perf probe -l 2>/dev/null | grep -q 'probe_libc:clock_gettime ' \
      || perf probe -q -x "$libc" --add clock_gettime >/dev/null 2>&1; }; then
    events+=",probe_libc:clock_gettime"
  else
    echo "net-syscalls.sh: --clock needs a uprobe on clock_gettime (root, a libc with symbols)" >&2
    exit 2
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "net-syscalls: HTTP, $procs workers per side, wrk -t$procs -c$conns, ${secs} s counted, $rounds rounds; $(nproc) CPUs; $(git log -1 --format='%h %s' | cut -c1-80); $bin$([ "$clock" = 1 ] && echo '; clock reads counted (CPU figures inflated by the uprobe)')"
for r in $(seq 1 "$rounds"); do
  order=(tokio gmprt)
  [ $((r % 2)) -eq 0 ] && order=(gmprt tokio)
  for side in "${order[@]}"; do
    # The server reads stdin until it closes: a sleep holds it open for the run.
    { sleep $((secs + 10)); } | "$bin" --serve-http "$side" --procs "$procs" > "$work/addr" &
    for _ in $(seq 100); do [ -s "$work/addr" ] && break; sleep 0.1; done
    addr=$(head -1 "$work/addr")
    pid=$(pgrep -n -f -- "--serve-http $side") || { echo "net-syscalls.sh: the $side server did not start" >&2; exit 1; }
    wrk -t"$procs" -c"$conns" -d1s "http://$addr/" > /dev/null
    ticks0=$(cut -d' ' -f14,15 "/proc/$pid/stat")   # utime stime, clock ticks, all threads
    perf stat -x, -e "$events" -p "$pid" -o "$work/perf.$side.$r" -- sleep "$secs" &
    perf_pid=$!
    wrk -t"$procs" -c"$conns" -d"${secs}s" "http://$addr/" > "$work/wrk.$side.$r"
    wait "$perf_pid"
    ticks1=$(cut -d' ' -f14,15 "/proc/$pid/stat")
    kill "$pid" 2>/dev/null || true
    wait 2>/dev/null || true
    echo "$side $r $(awk '/requests in/ { print $1 }' "$work/wrk.$side.$r") $work/perf.$side.$r $ticks0 $ticks1" >> "$work/runs"
  done
done

python3 - "$work/runs" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
rows = {}
tck = int(sys.argv[2])
for line in open(sys.argv[1]):
    side, rnd, req, path, u0, s0, u1, s1 = line.split()
    req = int(req)
    per = {}
    for l in open(path):
        p = l.strip().split(",")
        if len(p) < 3 or not p[0].replace(".", "").isdigit():
            continue
        name = (p[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all calls")
                .replace("probe_libc:clock_gettime", "clock reads"))
        per[name] = float(p[0]) / req
    per["CPU µs"] = per.pop("task-clock") * 1e3  # task-clock is in ms
    # /proc's utime and stime over the same window (wrk's run; perf's is a few ms longer)
    per["user µs"] = (int(u1) - int(u0)) / tck / req * 1e6
    per["system µs"] = (int(s1) - int(s0)) / tck / req * 1e6
    print(f"{side:5} round {rnd}: {req:,} requests; per request: "
          + ", ".join(f"{k} {v:.3f}" for k, v in per.items() if v > 0))
    rows.setdefault(side, []).append(per)
keys = [k for k in rows["tokio"][0] if any(r.get(k, 0) > 0 for side in rows.values() for r in side)]
print(f"\nper request, medians of {len(rows['tokio'])} runs:")
print(f"{'':18}{'tokio':>10}{'gmprt':>10}")
for k in keys:
    t = statistics.median(r.get(k, 0) for r in rows["tokio"])
    g = statistics.median(r.get(k, 0) for r in rows["gmprt"])
    print(f"{k:18}{t:10.3f}{g:10.3f}")
PY
