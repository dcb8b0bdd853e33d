#!/usr/bin/env bash
# The GPU validation runs (issue 6/12), in STAGES: one stage per device call, each well inside
# the device tool's 600 s per command, each writing exactly two files under $OUT:
#   $OUT/<stage>.tar.xz        every raw output of the stage (plus its summary)
#   $OUT/<stage>-summary.txt   what ran, each step's rc and time, key figures, device, driver
#
#   bash scripts/gpu/run.sh list          # the stages and their expected time on an H100/H200
#   bash scripts/gpu/run.sh <stage>...    # e.g. 0-env, or 1-correct 2-calibrate (each alone works)
#   bash scripts/gpu/run.sh all           # stages 0-4 and 6 in one device call (<= 560 s), each
#                                         # under its own budget (20/80/200/40/130/90 s), writing only
#                                         # $OUT/all.tar.xz (every stage's raw output) and
#                                         # $OUT/all-summary.txt, both refreshed after every stage:
#                                         # a call killed midway keeps the stages that finished
#   bash scripts/gpu/run.sh list-all      # the stages `all` runs, one per line
#
# Binaries: the archive from scripts/gpu/build.sh (carry devbin/gmprt-gpu-bin.tar.xz); it is
# unpacked into devbin/bin on first use (again when the archive changes). Environment:
#   OUT                 where the results go [default: out]
#   GMPRT_RUN_DEVICE    cuda (default: GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1, a missing GPU fails)
#                       or host (the dry run: GMPRT_DEVICE=host, GMPRT_REQUIRE_GPU unset)
#   GMPRT_GPU_SCALE     full (default) | small | smallest: problem sizes (the dry run uses small
#                       or smallest; full is what the GPU machine runs)
#   GMPRT_BIN_ARCHIVE   the archive [default: devbin/gmprt-gpu-bin.tar.xz]
#   GMPRT_BIN_DIR       where it is unpacked [default: devbin/bin]
#   GMPRT_STAGE_BUDGET  seconds a stage may take in all [default: 540]; every step also has its
#                       own timeout, cut to what is left of the budget
# Library search path: LD_LIBRARY_PATH is set explicitly (driver in /usr/local/nvidia/lib64,
# /usr/local/cuda/lib64, the Python env's nvidia-* wheels' lib dirs; never a `stubs` dir).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

STAGES=(0-env 1-correct 2-calibrate 3-screener 4-sched 5-bench 6-desk)
# Expected time of each stage on the GPU machine (H100/H200, 16 cores), full scale; the
# reasoning is in scripts/gpu/README.md.
declare -A EXPECT=(
  [0-env]="~10 s (8 s on the H200, 2026-11-27): nvidia-smi -q, lscpu, library paths, torch version"
  [1-correct]="~50 s (48 s on the H200, 2026-11-27): CUDA tests (GMPRT_REQUIRE_GPU=1) then every offload/kernels test binary"
  [2-calibrate]="~150-220 s (the calibration alone ran past 256 s on the H200 on 2026-11-27, before its series cap): PyTorch reference figures, explain --all --device cuda (calibration), explain --verify on that profile, ncu SpeedOfLight"
  [3-screener]="~15 s (13 s on the H200, 2026-11-27): option_screener 1e6 (and its way 3 with mapped I/O off), monte_carlo_pi 1e9/1e8, matmul_ladder 4096, spread (every GPU; a simulated pair), latency_ladder (CPU and GPU rungs)"
  [4-sched]="~100 s (79 s on the H100, 2026-11-27, before the echo step): scaling curve, cold and with memory warm (scripts/scaling.sh: gmprt, tokio, go at procs 1 2 4 8 16 + nproc, 3 rounds), --park at 16, amdahl 1..16, echo (benches/net.rs) at 16 procs against tokio"
  [5-bench]="~250-450 s (capped at 540; bench-scheduler alone 91 s on the H200, 2026-11-27): criterion benches scheduler + offload (BENCH_PROCS=16), the model bench"
  [6-desk]="~50 s (48 s on the H200, 2026-11-27): trading_desk at 5,000 ticks/s with cpu, gpu, auto, gpu --resident (1M contracts), then --sweep"
)

die() { echo "run.sh: error: $*" >&2; exit 1; }

usage() {
  sed -n '2,28p' "$0"
  echo
  list
}

list() {
  echo "stages (run one per device call, in this order; each writes <stage>.tar.xz + <stage>-summary.txt):"
  local s
  for s in "${STAGES[@]}"; do printf '  %-12s %s\n' "$s" "${EXPECT[$s]}"; done
}

# `all`: these stages, in this order, each under its budget in one device call (600 s at most,
# so 560 s leaves room for the unpacking and the transfers). The H100 run (2026-11-27,
# benches/results/h100-2026-11-27, with calibrate::MAX_RUN) took 8, 53, 165, 14, 79 and 29 s for
# them; 4-sched has ~25 s more since (the echo bench). Each budget is ~1.2-3x that; the second
# H200 run, before the series cap, ran calibration past 256 s. 5-bench (~220 s) needs a call of
# its own.
ALL_STAGES=(0-env 1-correct 2-calibrate 3-screener 4-sched 6-desk)
declare -A ALL_BUDGET=([0-env]=20 [1-correct]=80 [2-calibrate]=200 [3-screener]=40 [4-sched]=130 [6-desk]=90)

[ $# -gt 0 ] || { usage; exit 2; }
ALL=0
case $1 in
  list) list; exit 0 ;;
  # The stages `all` runs, one per line (dryrun.sh checks them through `all`).
  list-all) printf '%s\n' "${ALL_STAGES[@]}"; exit 0 ;;
  -h|--help|help) usage; exit 0 ;;
  all)
    [ $# -eq 1 ] || die "'all' runs ${ALL_STAGES[*]} and takes no other stage"
    ALL=1
    set -- "${ALL_STAGES[@]}"
    ;;
esac
for s in "$@"; do
  [ -n "${EXPECT[$s]+x}" ] || die "unknown stage '$s' (stages: ${STAGES[*]}; or 'list')"
done

OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RUN_DEVICE=${GMPRT_RUN_DEVICE:-cuda}
SCALE=${GMPRT_GPU_SCALE:-full}
ARCHIVE=${GMPRT_BIN_ARCHIVE:-devbin/gmprt-gpu-bin.tar.xz}
BIN=${GMPRT_BIN_DIR:-devbin/bin}
BUDGET=${GMPRT_STAGE_BUDGET:-540}
case $SCALE in full|small|smallest) ;; *) die "GMPRT_GPU_SCALE=$SCALE: expected full, small or smallest" ;; esac

case $RUN_DEVICE in
  cuda) export GMPRT_DEVICE=cuda GMPRT_REQUIRE_GPU=1 ;;
  host) export GMPRT_DEVICE=host; unset GMPRT_REQUIRE_GPU ;;
  *) die "GMPRT_RUN_DEVICE=$RUN_DEVICE: expected cuda or host" ;;
esac

# --- library search path ------------------------------------------------------------------
lib_dirs=()
add_dir() { case $1 in *stubs*) return ;; esac; [ -d "$1" ] && lib_dirs+=("$1"); return 0; }
add_dir /usr/local/nvidia/lib64
add_dir /usr/local/cuda/lib64
PY=${PYTHON:-python3}
if command -v "$PY" >/dev/null; then
  while IFS= read -r d; do [ -n "$d" ] && add_dir "$d"; done < <("$PY" - <<'PY' 2>/dev/null || true
import glob, os
try:
    import nvidia
except Exception:
    raise SystemExit(0)
for base in list(nvidia.__path__):
    for d in [os.path.join(base, "cu13", "lib")] + sorted(glob.glob(os.path.join(base, "*", "lib"))):
        if os.path.isdir(d) and "stubs" not in d:
            print(d)
PY
)
fi
LD_LIBRARY_PATH=$(IFS=:; echo "${lib_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# ncu (Nsight Compute) ships in the toolkit's bin/, which may not be on PATH.
if [ -d /usr/local/cuda/bin ]; then PATH=$PATH:/usr/local/cuda/bin; export PATH; fi

# --- binaries ------------------------------------------------------------------------------
unpack() {
  [ -f "$ARCHIVE" ] || die "no binary archive at $ARCHIVE: build it with 'bash scripts/gpu/build.sh' and carry it"
  local stamp="$BIN/.archive-sha256" sum
  sum=$(sha256sum "$ARCHIVE" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return 0; fi
  echo "unpacking $ARCHIVE into $BIN" >&2
  rm -rf "$BIN" && mkdir -p "$BIN"
  local tmp
  tmp=$(mktemp -d)
  xz -dc "$ARCHIVE" | tar -C "$tmp" -xf -
  mv "$tmp"/bin/* "$BIN"/
  cp "$tmp/MANIFEST" "$BIN/MANIFEST"
  rm -rf "$tmp"
  echo "$sum" > "$stamp"
}
unpack
BIN=$(cd "$BIN" && pwd)

# --- steps ---------------------------------------------------------------------------------
# step <name> <timeout s> <cmd...>: runs cmd with its output in $W/<name>.txt, under
# timeout min(<timeout>, what is left of the stage budget); records rc and time.
step() {
  local name=$1 limit=$2; shift 2
  local left=$((BUDGET - (SECONDS - STAGE_T0)))
  if [ "$left" -lt 15 ]; then
    echo "skipped (stage budget of ${BUDGET}s spent): $*" > "$W/$name.txt"
    printf '%-28s skipped: stage budget spent\n' "$name" >> "$SUMMARY"
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  local t0=$SECONDS rc=0
  echo "+ $* (timeout ${limit}s)" > "$W/$name.txt"
  echo "[$STAGE] $name: $* (timeout ${limit}s)" >&2
  timeout -k 10 "$limit" "$@" >> "$W/$name.txt" 2>&1 || rc=$?
  local dt=$((SECONDS - t0))
  echo "rc=$rc time=${dt}s" >> "$W/$name.txt"
  local what="rc=$rc"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then what="rc=$rc (TIMED OUT after ${limit}s)"; fi
  printf '%-28s %s %ss\n' "$name" "$what" "$dt" >> "$SUMMARY"
  [ "$rc" -eq 0 ] || FAILED=$((FAILED + 1))
  return 0
}
# note <name> <line>: a step that did not run, and why (not a failure).
note() { printf '%-28s %s\n' "$1" "$2" >> "$SUMMARY"; echo "$2" > "$W/$1.txt"; }
# figures <name> <grep -E pattern> [max lines]: key lines of a step's output into the summary.
figures() {
  local f="$W/$1.txt" n=${3:-8}
  [ -f "$f" ] || return 0
  grep -E -- "$2" "$f" | head -n "$n" | cut -c1-170 | sed 's/^/    /' >> "$SUMMARY" || true
}
# crit_figures <name> [max lines]: criterion's "<id> time: [lo mid hi]" lines (an id too long
# for one line is printed above its time: line; they are joined here).
crit_figures() {
  local f="$W/$1.txt" n=${2:-16}
  [ -f "$f" ] || return 0
  awk '/^[^ ]/ { id = $1 } /^ +time:/ { print id " " $0; next } /^[^ ].* time:/ { print }' "$f" |
    tr -s ' ' | head -n "$n" | cut -c1-170 | sed 's/^/    /' >> "$SUMMARY" || true
}
# pick <full> <small> <smallest>: the value for this scale.
pick() { case $SCALE in full) echo "$1" ;; small) echo "$2" ;; smallest) echo "$3" ;; esac; }

device_line() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || echo "nvidia-smi failed"
  else
    echo "no nvidia-smi (no GPU driver on this machine)"
  fi
}

# Real path of each CUDA library as found on LD_LIBRARY_PATH (first hit), then the loader's cache.
resolve_libs() {
  local lib d found
  for lib in libcuda.so.1 libnvrtc.so.13 libcublas.so.13 libcublasLt.so.13; do
    found=""
    for d in "${lib_dirs[@]}"; do
      if [ -e "$d/$lib" ]; then found="$d/$lib -> $(readlink -f "$d/$lib")"; break; fi
    done
    if [ -z "$found" ]; then
      d=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')
      if [ -n "$d" ]; then found="$d -> $(readlink -f "$d") (ldconfig cache, not on LD_LIBRARY_PATH)"; else found="not found"; fi
    fi
    printf '%-18s %s\n' "$lib" "$found"
  done
}

# --- stages --------------------------------------------------------------------------------
stage_0_env() {
  {
    echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1) ($(nproc) cores)"
    resolve_libs | sed 's/^/lib /'
  } >> "$SUMMARY"
  {
    echo "== nvidia-smi -q"; if command -v nvidia-smi >/dev/null; then nvidia-smi -q || true; else echo "no nvidia-smi"; fi
    echo "== nvidia-smi topo"; if command -v nvidia-smi >/dev/null; then nvidia-smi topo -m || true; fi
  } > "$W/nvidia-smi.txt" 2>&1
  { echo "== lscpu"; lscpu || cat /proc/cpuinfo; echo "== free -g"; free -g || true; echo "== uname"; uname -a;
    echo "== os"; cat /etc/os-release 2>/dev/null || true; } > "$W/cpu.txt" 2>&1
  {
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    resolve_libs
    echo "== every libcuda/libnvrtc/libcublas on the search path"
    local d; for d in "${lib_dirs[@]}"; do
      find "$d" -maxdepth 1 \( -name 'libcuda.*' -o -name 'libnvrtc*' -o -name 'libcublas*' \) -printf '%p -> %l (%s B)\n' 2>/dev/null || true
    done
    echo "== ldconfig -p"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libnvrtc|libcublas' || true
    echo "== nvcc/ncu"; find /usr/local/cuda/bin -maxdepth 1 -printf '%f ' 2>/dev/null || true; echo
    command -v ncu >/dev/null && ncu --version 2>&1 | tail -n 1 || echo "no ncu on PATH"
  } > "$W/libs.txt" 2>&1
  # torch missing is recorded, not a failure (the dry run has none; reference.py says so too).
  step torch 60 "$PY" -c '
import sys
print("python", sys.version.split()[0])
try:
    import torch
except Exception as e:
    print("torch: not importable:", e)
    raise SystemExit(0)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")'
  figures torch '^(python|torch|device)'
  # Which device the offload layer picks (and why), with a run so small it costs nothing.
  step device-detect 60 "$BIN/monte_carlo_pi" --samples 1e4 --paths 1e3
  figures device-detect '^(monte_carlo_pi: device|.*(CUDA|cuda|error))' 4
  cp "$BIN/MANIFEST" "$W/MANIFEST.txt"
  env | grep -E '^(GMPRT_|LD_LIBRARY_PATH|CUDA_)' | sort > "$W/env.txt" || true
}

stage_1_correct() {
  # The CUDA harness first: with GMPRT_REQUIRE_GPU=1 a missing GPU fails every [gpu] test.
  step test-offload-cuda "$(pick 240 120 120)" "$BIN/test-offload-cuda" --nocapture --test-threads=1
  figures test-offload-cuda '^(test result|cuda tests)' 4
  figures test-offload-cuda '^test .*(FAILED|ignored)' 6
  local t name
  for t in "$BIN"/test-offload-* "$BIN"/test-kernels-*; do
    name=$(basename "$t")
    [ "$name" = test-offload-cuda ] && continue
    step "$name" "$(pick 200 120 120)" "$t" --test-threads="$(nproc)"
    figures "$name" '^test result' 2
  done
}

stage_2_calibrate() {
  step reference 120 "$PY" "$ROOT/scripts/gpu/reference.py" --out "$W/reference.json" --scale "$SCALE"
  figures reference '^(skipped|reference|  )' 12
  local quick=()
  [ "$SCALE" = full ] || quick=(--calibrate-quick)
  step calibrate "$(pick 360 240 200)" "$BIN/explain" --all --device "$RUN_DEVICE" "${quick[@]}" \
    --save-profile "$W/profile.json" --out "$W/img"
  figures calibrate '^(explain: profile saved|[a-z-]+: n = |  Verdict:|  crossover,)' 18
  # The model held to this machine (issue 27, item 5): each kernel at its default n, device and
  # CPU, every phase predicted against measured. explain exits 1 when a phase is off by more
  # than 25%: a finding for the summary, not a failed step (the wrapper maps 1 to 0, says so).
  if [ -f "$W/profile.json" ]; then
    step verify "$(pick 90 60 45)" bash -c '"$@"; rc=$?; if [ "$rc" -eq 1 ]; then
        echo "(explain rc=1: a phase off by more than 25%, listed above: a finding, not a failed run)"; rc=0; fi
      exit "$rc"' verify "$BIN/explain" --all --device "$W/profile.json" --verify --out "$W/img-verify"
    figures verify '^(explain --verify:|  .* predicted .* measured |\(explain rc=1)' 26
  else
    note verify "skipped: no profile.json (the calibrate step did not save one)"
  fi
  if command -v ncu >/dev/null; then
    step ncu-speed-of-light 150 ncu --section SpeedOfLight -k regex:gmprt_ --launch-count 6 \
      "$BIN/monte_carlo_pi" --samples "$(pick 1e8 1e7 1e6)" --paths "$(pick 1e7 1e6 1e5)"
    figures ncu-speed-of-light '(gmprt_|Throughput|Duration)' 16
    # Black-Scholes and SAXPY at sizes well past launch overhead (issue 27, item 8): 1M options
    # (way 5, two launches: resident and with copies) and 4M-element SAXPY batches.
    step ncu-black-scholes 60 ncu --section SpeedOfLight -k regex:'gmprt_black_scholes$' --launch-count 2 \
      "$BIN/option_screener" --n "$(pick 1e6 1e5 1e4)" --ways 5
    figures ncu-black-scholes '(gmprt_|Throughput|Duration)' 10
    step ncu-saxpy 60 ncu --section SpeedOfLight -k regex:'gmprt_saxpy$' --launch-count 2 \
      "$BIN/spread" --devices all --items "$(pick 16e6 1e6 1e5)" --max-batch "$(pick 4194304 262144 65536)"
    figures ncu-saxpy '(gmprt_|Throughput|Duration)' 10
  else
    note ncu-speed-of-light "skipped: no ncu on PATH"
    note ncu-black-scholes "skipped: no ncu on PATH"
    note ncu-saxpy "skipped: no ncu on PATH"
  fi
  if [ -f "$W/reference.json" ] && [ -f "$W/profile.json" ]; then
    step fractions 30 "$PY" "$ROOT/scripts/gpu/ref_fractions.py" "$W/reference.json" "$W/profile.json"
    figures fractions '^(profile|note|skipped|H2D|D2H|saxpy|black_scholes|sgemm|empty)' 16
  else
    note fractions "skipped: needs reference.json and profile.json (missing: $( [ -f "$W/reference.json" ] || echo reference.json) $( [ -f "$W/profile.json" ] || echo profile.json))"
  fi
}

stage_3_screener() {
  step option_screener "$(pick 200 120 60)" "$BIN/option_screener" --n "$(pick 1e6 1e5 1e4)" \
    --per-launch-cap "$(pick 20000 5000 1000)"
  figures option_screener '^(way|[0-9][ab]?\. |all ways)' 10
  # Way 3 again with mapped I/O off (GMPRT_CUDA_MAPPED_IO, the CUDA slot's small runs): the
  # same binary's copy path beside the run above, so every visit records what mapping saves.
  step way3-copies "$(pick 60 30 30)" env GMPRT_CUDA_MAPPED_IO=off "$BIN/option_screener" \
    --n "$(pick 1e6 1e5 1e4)" --per-launch-cap "$(pick 20000 5000 1000)" --ways 3
  figures way3-copies '^(3\. |    batch time)' 3
  step monte_carlo_pi "$(pick 150 120 60)" "$BIN/monte_carlo_pi" --samples "$(pick 1e9 1e7 1e6)" --paths "$(pick 1e8 1e6 1e5)"
  figures monte_carlo_pi '^(cpu:|device:|same stream|cpu − device)' 10
  step matmul_ladder "$(pick 240 120 60)" "$BIN/matmul_ladder" --n "$(pick 4096 256 128)" --naive-max "$(pick 512 128 64)"
  figures matmul_ladder '^(rung|[0-9]\. )' 18
  # One Batcher over every device (issue 29): on a one-GPU machine the per-GPU rate with bulk
  # submits, which N GPUs multiply; then a simulated mixed pair on this machine's cores.
  step spread-all "$(pick 60 30 30)" "$BIN/spread" --devices all --items "$(pick 16e6 1e6 1e5)" --max-batch 65536
  figures spread-all '^(run|[0-9]|all|  [0-9]|spread /)' 8
  step spread-sim "$(pick 60 30 30)" "$BIN/spread" --devices h200,h200/2 --items "$(pick 16e6 1e6 1e5)"
  figures spread-sim '^(run|[0-9]|all|  [0-9]|spread /)' 8
  # SEEDS story 3: the CPU's rungs (FMA, each cache level, DRAM at 4x the last-level cache,
  # core to core) and the GPU's (one thread: FMA, L1, L2, device memory) beside the article's.
  local ladder=("$BIN/latency_ladder" --steps "$(pick 2e6 2e5 2e4)" --reps "$(pick 5 3 1)")
  [ "$SCALE" = full ] || ladder+=(--dram-bytes "$(pick - 16777216 4194304)")
  step latency_ladder "$(pick 60 30 30)" "${ladder[@]}"
  figures latency_ladder '^(caches|rung|FMA|L[0-9]|DRAM|GPU|core to core|SM to SM|Little)' 12
}

# The trading desk (issue 28): the same book priced three ways at the rate of the issue's
# tick -> ack target, then the sweep (highest sustained rate per placement).
stage_6_desk() {
  local desk=("$BIN/trading_desk" --contracts "$(pick 1e6 1e5 1e4)" --ticks "$(pick 25000 5000 2000)")
  for p in cpu gpu auto; do
    step "desk-$p" "$(pick 60 40 30)" "${desk[@]}" --placement "$p" --rate "$(pick 5000 5000 0)"
    figures "desk-$p" '^(trading_desk:|  (tick ->|risk updates|placement:|Monte Carlo|check))' 9
  done
  # The book resident on the device: moved spots up, their sums back (issue 28's >= 10k
  # resident full-book revaluations/s).
  step desk-resident "$(pick 60 40 30)" "${desk[@]}" --placement gpu --resident --rate "$(pick 5000 5000 0)"
  figures desk-resident '^(trading_desk:|  (tick ->|risk updates|placement:|resident book|check))' 9
  # At the smallest scale (CI's dry run) each sweep step sends 0.1 s of feed (at least 2,000
  # ticks): the full second made this step 24 of the dry run's 117 s.
  step desk-sweep "$(pick 200 120 60)" "${desk[@]}" --sweep --sweep-secs "$(pick 1 1 0.1)"
  figures desk-sweep '^(trading_desk --sweep|  (Cpu|Gpu|Auto|auto /|at half))' 8
}

stage_4_sched() {
  local tasks p maxp
  tasks=$(pick 1e6 2e5 2e4)
  maxp=$(nproc)
  # The scaling curve: million_tasks on gmprt and tokio and the Go peer (benches/go/million_tasks,
  # built into the archive by build.sh as million_tasks_go; skipped if absent and no `go` here),
  # interleaved per P, median of the rounds. scripts/scaling.sh travels with the working tree.
  # Full: P = 1 2 4 8 16 plus nproc (its default); dry runs: only the Ps <= nproc.
  local sargs=(--bin "$BIN" --tasks "$tasks" --rounds "$(pick 3 2 1)")
  if [ "$SCALE" != full ]; then
    local plist=""
    for p in 1 2 4 8 16; do [ "$p" -gt "$maxp" ] || plist="$plist $p"; done
    sargs+=(--procs "$plist $maxp")
  fi
  [ ! -x "$BIN/million_tasks_go" ] || sargs+=(--go "$BIN/million_tasks_go")
  # Full: 3 rounds x 5-6 Ps x 3 runtimes, ~0.3-0.9 s a run at 1e6 tasks -> ~15-50 s; 240 s
  # leaves room for a slow Go P=1 or an oversubscribed tokio (each run has its own 120 s).
  step scaling "$(pick 240 120 60)" bash "$ROOT/scripts/scaling.sh" "${sargs[@]}"
  figures scaling '^(go:|machine:|\| |scaling: [0-9])' 12
  # The same curve with the memory warm (gmprt and tokio time a second run in one process):
  # the scheduler's own cost, without the kernel's first touch of ~140 MB of fresh pages, which
  # on the 2-core VM was a fifth of a cold run and all on the spawner. Twice the gmprt and tokio
  # runs of the step above: ~30-80 s at full scale.
  step scaling-warm "$(pick 240 120 60)" bash "$ROOT/scripts/scaling.sh" "${sargs[@]}" --warm
  figures scaling-warm '^(go:|machine:|\| |scaling: [0-9])' 12
  # All N tasks parked at once: the bytes each costs (the scaling step measures spawn+join).
  p=$(pick 16 "$maxp" "$maxp")
  step "million_tasks-park-p$p" 90 "$BIN/million_tasks" --tasks "$tasks" --procs "$p" --park
  figures "million_tasks-park-p$p" '^million_tasks runtime=' 1
  # The speed-up curve against Amdahl's law, p fitted from the measurements (issue 13, item 8).
  step amdahl "$(pick 120 60 30)" "$BIN/amdahl" --max-procs "$(pick 16 "$maxp" 2)" \
    --serial "$(pick 20000000 2000000 200000)" --parallel "$(pick 80000000 8000000 800000)" --out "$W/amdahl.svg"
  figures amdahl '^( *[0-9]+ |fitted|measured|serial)' 24
  # Echo (benches/net.rs, issue 25: >= 1.1x tokio with p99 <= 1.0x at 16 procs): 1,000
  # connections of 64-byte round trips against gmprt's and tokio's echo servers, the client this
  # binary again in a child process; 3 rounds x 2 sides x 3 s -> ~20 s at full scale.
  p=$(pick 16 "$maxp" "$maxp")
  step echo "$(pick 60 30 20)" "$BIN/bench-net" echo --procs "$p" --secs "$(pick 3 1 1)" \
    --rounds "$(pick 3 1 1)" --conns "$(pick 1000 200 50)" --json "$W/bench-net.json"
  figures echo '^(echo|net bench)' 12
}

stage_5_bench() {
  local procs crit=()
  procs=$(pick 16 "$(nproc)" "$(nproc)")
  case $SCALE in
    full) crit=(--bench --warm-up-time 1 --measurement-time 3) ;;
    small) crit=(--bench --warm-up-time 0.2 --measurement-time 0.5) ;;
    smallest) crit=() ;;  # criterion's test mode: every benchmark runs once
  esac
  step bench-scheduler 200 env BENCH_PROCS="$procs" "$BIN/bench-scheduler" "${crit[@]}"
  crit_figures bench-scheduler 20
  step bench-offload 150 env BENCH_PROCS="$procs" "$BIN/bench-offload" "${crit[@]}"
  crit_figures bench-offload 10
  if [ "$SCALE" = smallest ]; then
    note bench-model "skipped at GMPRT_GPU_SCALE=smallest (it always runs a full calibration first)"
  else
    local saved=${TMPDIR:-/tmp}/gmprt-model-bench-profile.json
    rm -f "$saved"
    step bench-model 200 "$BIN/bench-model" "${crit[@]}"
    figures bench-model '^(calibrated|kernel  |worst)' 4
    crit_figures bench-model 6
    # The bench's own full calibration (offload/benches/model.rs writes it there).
    [ ! -f "$saved" ] || cp "$saved" "$W/bench-model-profile.json"
  fi
}

run_stage() {
  STAGE=$1
  STAGE_T0=$SECONDS
  FAILED=0
  if [ "$ALL" -eq 1 ]; then BUDGET=${ALL_BUDGET[$STAGE]}; fi
  local parent
  parent=$(mktemp -d "${TMPDIR:-/tmp}/gmprt-stage.XXXXXX")
  W=$parent/$STAGE
  mkdir -p "$W"
  SUMMARY=$W/summary.txt
  {
    echo "stage $STAGE ($(date -u +%Y-%m-%dT%H:%M:%SZ)) scale=$SCALE GMPRT_DEVICE=$GMPRT_DEVICE GMPRT_REQUIRE_GPU=${GMPRT_REQUIRE_GPU:-unset}"
    echo "device: $(device_line)"
    echo "host: $(uname -n), $(nproc) cores; binaries $(sed -n 2p "$BIN/MANIFEST")"
    echo "steps (name, rc, seconds; indented: key lines of its output):"
  } > "$SUMMARY"
  "stage_${STAGE//-/_}"
  echo "stage $STAGE: $FAILED step(s) failed, $((SECONDS - STAGE_T0)) s (budget ${BUDGET} s)" >> "$SUMMARY"
  TOTAL_FAILED=$((TOTAL_FAILED + FAILED))
  if [ "$ALL" -eq 1 ]; then
    # Keep the stage's folder and refresh the two combined files (each written whole, then
    # renamed over the last one, so a kill never leaves a half-written file).
    mv "$W" "$ALL_DIR/$STAGE"
    rm -rf "$parent"
    cat "$ALL_DIR"/*/summary.txt > "$OUT/.all-summary.txt.new"
    mv "$OUT/.all-summary.txt.new" "$OUT/all-summary.txt"
    tar -C "$ALL_DIR" -cf - . | xz -T0 -6 > "$OUT/.all.tar.xz.new"
    mv "$OUT/.all.tar.xz.new" "$OUT/all.tar.xz"
    echo "[$STAGE] done in $((SECONDS - STAGE_T0)) s, $FAILED failed: $OUT/all.tar.xz, $OUT/all-summary.txt refreshed" >&2
    return 0
  fi
  tar -C "$parent" -cf - "$STAGE" | xz -T0 -6 > "$OUT/$STAGE.tar.xz"
  cp "$SUMMARY" "$OUT/$STAGE-summary.txt"
  rm -rf "$parent"
  echo "[$STAGE] done in $((SECONDS - STAGE_T0)) s, $FAILED failed: $OUT/$STAGE.tar.xz, $OUT/$STAGE-summary.txt" >&2
}

TOTAL_FAILED=0
if [ "$ALL" -eq 1 ]; then
  ALL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gmprt-all.XXXXXX")
fi
for s in "$@"; do run_stage "$s"; done
if [ "$ALL" -eq 1 ]; then rm -rf "$ALL_DIR"; fi
[ "$TOTAL_FAILED" -eq 0 ] || { echo "run.sh: $TOTAL_FAILED step(s) failed (see the summaries)" >&2; exit 1; }
