#!/usr/bin/env bash
# The scaling curve: spawn + join N tasks from one root task at several P counts, on gmprt,
# tokio and Go, in interleaved rounds (each round runs every P, and at each P gmprt, tokio, go
# one after the other, so drift on the machine hits the three runtimes alike).
#
#   bash scripts/scaling.sh [--tasks N] [--rounds R] [--procs "1 2 4 8 16"] [--bin DIR] [--go BIN] [--warm]
#
#   --tasks N     tasks per run, 1000000, 1_000_000 or 1e6 [default: 1e6]
#   --rounds R    rounds; the table shows the median over them [default: 3]
#   --procs LIST  P counts, quoted, space-separated [default: "1 2 4 8 16", plus `nproc` if
#                 it is not in that list]
#   --bin DIR     where million_tasks is [default: target/release/examples]
#   --go BIN      the Go peer (benches/go/million_tasks) already built [default: built into a
#                 temp dir when `go` is on PATH, else $GMPRT_GO_MILLION if set, else Go is
#                 skipped with a "go: not installed, skipped" line]
#   --warm        gmprt and tokio run `million_tasks --warm`: each times a second spawn + join
#                 in its process, on the memory the first one left, so the kernel's first touch
#                 of ~140 MB of fresh pages is out of the figure (Go's program reuses its
#                 goroutines as it goes, and runs as always)
#
# Runs: <bin>/million_tasks --tasks N --procs P [--runtime tokio], and <go> -tasks N -procs P,
# each under `timeout 120` (GMPRT_SCALING_TIMEOUT overrides; --foreground, so a timeout around
# this script, or Ctrl-C, reaches the run in progress too). Output, all on stdout:
#   raw: <each run's result line, as it is produced>   (raw: FAIL ... for a run that failed)
#   the machine line (cores, kernel, CPU model, date, commit)
#   a markdown table: procs | gmprt, tokio, go median ns/task | gmprt/tokio | gmprt/go |
#     gmprt(P)/gmprt(1): ratios of ns/task (< 1: gmprt cheaper per task; for the last column,
#     cheaper than at the smallest P)
#   the same three ratios paired by round (each round's runs are adjacent): their median and a
#     95% interval for it (the sign test's, from the order statistics; needs >= 6 rounds)
#   gmprt's counter lines from the last round, per P (every non-empty output line holding '='
#     or 'steal', verbatim)
# A failed run is reported and the rounds go on; its cell shows `fail` (or the median of the
# runs that did succeed, with how many failed). Exit status 1 if any run failed, 2 on bad usage.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "scaling.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,34p' "$0"; }

tasks=1e6
rounds=3
procs_given=""
bin=$ROOT/target/release/examples
gobin=""
warm=()
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) tasks=${2:?--tasks needs a value}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --procs) procs_given=${2:?--procs needs a value}; shift 2 ;;
    --bin) bin=${2:?--bin needs a value}; shift 2 ;;
    --go) gobin=${2:?--go needs a value}; shift 2 ;;
    --warm) warm=(--warm); shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

[[ $tasks =~ ^[0-9][0-9_]*([eE][0-9]+)?$ ]] || die "--tasks '$tasks': expected 1000000, 1_000_000 or 1e6"
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] || die "--rounds '$rounds': expected a whole number >= 1"
limit=${GMPRT_SCALING_TIMEOUT:-120}
[[ $limit =~ ^[0-9]+$ ]] && [ "$limit" -ge 1 ] || die "GMPRT_SCALING_TIMEOUT='$limit': expected seconds >= 1"

cores=$(nproc)
if [ -n "$procs_given" ]; then
  plist=$procs_given
else
  plist="1 2 4 8 16 $cores"
fi
procs=()
for p in $plist; do
  [[ $p =~ ^[0-9]+$ ]] && [ "$p" -ge 1 ] || die "--procs: '$p' is not a whole number >= 1"
  procs+=("$p")
done
[ ${#procs[@]} -gt 0 ] || die "--procs: empty list"
# Numeric order, duplicates dropped (the default list may name nproc twice).
mapfile -t procs < <(printf '%s\n' "${procs[@]}" | sort -n -u)

mt=$bin/million_tasks
[ -x "$mt" ] || die "no executable million_tasks in $bin (cargo build --release --example million_tasks, or --bin DIR)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmprt-scaling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- the Go peer ---------------------------------------------------------------------------
go_note=""
if [ -n "$gobin" ]; then
  [ -x "$gobin" ] || die "--go $gobin: not an executable file"
  go_note="go: $gobin (given)"
elif command -v go >/dev/null; then
  if (cd "$ROOT/benches/go/million_tasks" && CGO_ENABLED=0 go build -o "$tmp/million_tasks_go" .) > "$tmp/go-build.txt" 2>&1; then
    gobin=$tmp/million_tasks_go
    go_note="go: built from benches/go/million_tasks with $(go version)"
  else
    go_note="go: build of benches/go/million_tasks failed, skipped ($(tr '\n' ' ' < "$tmp/go-build.txt" | cut -c1-300))"
  fi
elif [ -n "${GMPRT_GO_MILLION:-}" ]; then
  [ -x "$GMPRT_GO_MILLION" ] || die "GMPRT_GO_MILLION=$GMPRT_GO_MILLION: not an executable file"
  gobin=$GMPRT_GO_MILLION
  go_note="go: $gobin (GMPRT_GO_MILLION)"
else
  go_note="go: not installed, skipped"
fi
runtimes=(gmprt tokio)
[ -z "$gobin" ] || runtimes+=(go)

if [ ${#warm[@]} -gt 0 ]; then
  echo "scaling: million_tasks spawn+join, memory warm (gmprt and tokio: --warm; Go as always), tasks=$tasks rounds=$rounds procs=${procs[*]} timeout=${limit}s"
else
  echo "scaling: million_tasks spawn+join, tasks=$tasks rounds=$rounds procs=${procs[*]} timeout=${limit}s"
fi
echo "scaling: bin $mt"
echo "$go_note"

# --- the runs ------------------------------------------------------------------------------
results=$tmp/results.txt   # "<runtime> <procs> <round> <ns_per_task|fail>"
: > "$results"
failed=0
# run_one <runtime> <procs> <round>: one run, its result line printed as raw:, recorded.
run_one() {
  local rt=$1 p=$2 r=$3 out=$tmp/run.txt rc=0 line ns
  case $rt in
    gmprt) timeout --foreground -k 5 "$limit" "$mt" --tasks "$tasks" --procs "$p" "${warm[@]}" > "$out" 2>&1 || rc=$? ;;
    tokio) timeout --foreground -k 5 "$limit" "$mt" --tasks "$tasks" --procs "$p" --runtime tokio "${warm[@]}" > "$out" 2>&1 || rc=$? ;;
    go) timeout --foreground -k 5 "$limit" "$gobin" -tasks "$tasks" -procs "$p" > "$out" 2>&1 || rc=$? ;;
  esac
  line=$(grep -E '^million_tasks runtime=' "$out" | tail -n 1 || true)
  ns=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^ns_per_task=/) { sub(/^ns_per_task=/, "", $i); print $i } }' <<< "$line")
  if [ "$rc" -ne 0 ] || ! [[ $ns =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    local why="rc=$rc"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="rc=$rc (timed out after ${limit}s)"; fi
    [ "$rc" -ne 0 ] || why="rc=0 but no 'million_tasks runtime=... ns_per_task=' line"
    echo "raw: FAIL runtime=$rt procs=$p round=$r $why; last lines of its output:"
    tail -n 5 "$out" | sed 's/^/raw:   | /'
    echo "$rt $p $r fail" >> "$results"
    failed=$((failed + 1))
  else
    echo "raw: $line"
    echo "$rt $p $r $ns" >> "$results"
  fi
  # gmprt's full output of the last round, for the counters block.
  if [ "$rt" = gmprt ] && [ "$r" -eq "$rounds" ]; then cp "$out" "$tmp/gmprt-last-p$p.txt"; fi
  return 0
}

for ((r = 1; r <= rounds; r++)); do
  for p in "${procs[@]}"; do
    for rt in "${runtimes[@]}"; do run_one "$rt" "$p" "$r"; done
  done
done

# --- the table -----------------------------------------------------------------------------
# median <runtime> <procs>: median ns/task over the rounds that succeeded ("fail" if none),
# with " (k fail)" appended when some failed.
median() {
  awk -v rt="$1" -v p="$2" '$1 == rt && $2 == p { if ($4 == "fail") f++; else v[++n] = $4 }
    END {
      if (n == 0) { printf "fail"; exit }
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] + 0 > x + 0; j--) v[j + 1] = v[j]; v[j + 1] = x }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%.1f", m
      if (f > 0) printf " (%d fail)", f
    }' "$results"
}
# ratio <a> <b>: a/b to 2 decimals, "-" unless both are numbers (a trailing note is ignored).
ratio() {
  awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN {
    if (a ~ /^[0-9]+(\.[0-9]+)?$/ && b ~ /^[0-9]+(\.[0-9]+)?$/ && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'
}

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
if [ -n "$commit" ]; then
  dirty=$(git -C "$ROOT" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | wc -l || echo 0)
  [ "$dirty" -eq 0 ] || commit="$commit (+$dirty tracked files changed)"
else
  commit="unknown (no git)"
fi
base=${procs[0]}
echo
echo "machine: nproc=$cores kernel=$(uname -r) cpu=\"${cpu:-unknown}\" date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$commit"
# The archive of scripts/gpu/build.sh names the commit the binaries were built from, and their
# sha256. Its commit is printed only if it lists this million_tasks: a MANIFEST left beside
# binaries that were rebuilt since (an archive once unpacked into target/release/examples)
# would name a commit they were not built from.
if [ -f "$bin/MANIFEST" ]; then
  sum=$(sha256sum "$bin/million_tasks" 2>/dev/null | cut -d' ' -f1)
  if [ -n "$sum" ] && grep -q "^$sum  million_tasks\$" "$bin/MANIFEST"; then
    echo "binaries: $(sed -n 2p "$bin/MANIFEST")"
  else
    echo "binaries: $bin/MANIFEST ignored: it does not list this million_tasks (sha256 $sum)"
  fi
fi
echo "median ns/task over $rounds round(s), tasks=$tasks; ratios of ns/task (< 1: gmprt cheaper)"
echo
echo "| procs | gmprt median ns/task | tokio | go | gmprt/tokio | gmprt/go | gmprt(P)/gmprt($base) |"
echo "|---|---|---|---|---|---|---|"
g1=$(median gmprt "$base")
for p in "${procs[@]}"; do
  g=$(median gmprt "$p")
  t=$(median tokio "$p")
  if [ -n "$gobin" ]; then o=$(median go "$p"); else o=skipped; fi
  echo "| $p | $g | $t | $o | $(ratio "$g" "$t") | $(ratio "$g" "$o") | $(ratio "$g" "$g1") |"
done

# --- paired ratios -------------------------------------------------------------------------
# paired <rtA> <pA> <rtB> <pB>: over the rounds where both runs succeeded, the ratios A/B of the
# same round (adjacent runs, so a drift of the machine hits both), their median, and a 95%
# interval for that median from the order statistics: the narrowest [r(k), r(n+1-k)] of the
# sorted ratios whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is still >= 0.95 (the sign test's
# interval, free of any assumption on the distribution; it needs n >= 6).
paired() {
  awk -v ra="$1" -v pa="$2" -v rb="$3" -v pb="$4" '
    $4 != "fail" && $1 == ra && $2 == pa { a[$3] = $4 }
    $4 != "fail" && $1 == rb && $2 == pb { b[$3] = $4 }
    END {
      n = 0
      for (r in a) if ((r in b) && b[r] + 0 > 0) v[++n] = a[r] / b[r]
      if (n == 0) { printf "-"; exit }
      for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      k = 0; below = 0; c = 1; pe = 0.5 ^ n
      for (kk = 1; kk <= int(n / 2); kk++) {
        below += c * pe; c = c * (n - kk + 1) / kk
        if (1 - 2 * below < 0.95) break
        k = kk; cov = 1 - 2 * below
      }
      if (k == 0) printf "%.2f (n=%d, too few for 95%%)", m, n
      else printf "%.2f [%.2f, %.2f] (%.1f%%, n=%d)", m, v[k], v[n + 1 - k], 100 * cov, n
    }' "$results"
}
echo
echo "paired per round: median of the ratios [95% interval] (coverage, rounds); at the line when the interval holds the target"
echo
echo "| procs | gmprt/tokio | gmprt/go | gmprt(P)/gmprt($base) |"
echo "|---|---|---|---|"
for p in "${procs[@]}"; do
  if [ -n "$gobin" ]; then o=$(paired gmprt "$p" go "$p"); else o=skipped; fi
  if [ "$p" = "$base" ]; then s="-"; else s=$(paired gmprt "$p" gmprt "$base"); fi
  echo "| $p | $(paired gmprt "$p" tokio "$p") | $o | $s |"
done

# --- gmprt's counters, last round ----------------------------------------------------------
echo
echo "gmprt counters (round $rounds, every output line with '=' or 'steal'):"
for p in "${procs[@]}"; do
  echo "  procs=$p:"
  if [ -f "$tmp/gmprt-last-p$p.txt" ]; then
    grep -E '=|steal' "$tmp/gmprt-last-p$p.txt" | grep -v -E '^[[:space:]]*$' | sed 's/^/    /' || echo "    (no such line)"
  else
    echo "    (no output)"
  fi
done

if [ "$failed" -gt 0 ]; then
  echo
  echo "scaling: $failed run(s) failed (raw: FAIL lines above)"
  exit 1
fi
