#!/usr/bin/env bash
# The whole GPU pipeline on this machine, without a GPU, so the scripts cannot rot:
#   build (scripts/gpu/build.sh) -> archive, size checked -> unpacked into a fresh folder ->
#   every stage of scripts/gpu/run.sh with GMPRT_DEVICE=host (GMPRT_REQUIRE_GPU unset), at
#   reduced sizes: `run.sh all` (stages 0-4 and 6) and, on their own, 0-env and the stages
#   `all` leaves out -> checks that each call wrote its two files (<stage>.tar.xz +
#   <stage>-summary.txt, or all.tar.xz + all-summary.txt) and that the device tool would bring
#   them back (≤ 8 files, ≤ 16 MiB each, names [A-Za-z0-9._-], at most 2 folders deep).
#
#   bash scripts/gpu/dryrun.sh              # GMPRT_GPU_SCALE=small, binaries built --profile gpu
#   bash scripts/gpu/dryrun.sh --smallest   # what .ci/run runs: GMPRT_GPU_SCALE=smallest
#
# --smallest builds with --profile gpu like the real run; --profile P picks another cargo
# profile: `release` reuses the release build CI's test step has just made (a separate gpu
# build from nothing costs CI over 2 minutes, scripts/gpu/README.md), and its copies are
# stripped (`build.sh --strip`, when `strip` is there) so the archive is what --profile gpu
# packs and its 60 MiB check still applies; without `strip` the size is only reported.
# Everything goes under target/gpu-dryrun/ (ignored by git); the stages' files stay in
# target/gpu-dryrun/out/<stage>/ for a look.
set -euo pipefail
cd "$(dirname "$0")/../.."

scale=small
profile=gpu
while [ $# -gt 0 ]; do
  case $1 in
    --smallest) scale=smallest; shift ;;
    --small) scale=small; shift ;;
    --profile) profile=${2:?--profile needs a value}; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "dryrun.sh: unknown argument '$1' (known: --smallest, --small, --profile P)" >&2; exit 2 ;;
  esac
done

die() { echo "dryrun.sh: FAILED: $*" >&2; exit 1; }
base=target/gpu-dryrun
rm -rf "$base"
mkdir -p "$base/out"
archive=$base/devbin/gmprt-gpu-bin.tar.xz
T0=$SECONDS

echo "==> build (--profile $profile) and archive"
t=$SECONDS
limit_args=()
if [ "$profile" != gpu ]; then
  if command -v strip >/dev/null; then limit_args=(--strip); else limit_args=(--no-size-limit); fi
fi
if ! bash scripts/gpu/build.sh --profile "$profile" --archive "$archive" "${limit_args[@]}" > "$base/build.log" 2>&1; then
  cat "$base/build.log" >&2
  die "scripts/gpu/build.sh failed (its output is above)"
fi
grep -E '^(archive|cargo builds|build.sh)' "$base/build.log"
build_s=$((SECONDS - t))

mapfile -t stages < <(bash scripts/gpu/run.sh list | awk '/^  [0-9]-/ { print $1 }')
[ ${#stages[@]} -gt 0 ] || die "run.sh list printed no stages"

# The stages `run.sh all` runs (checked once, below, through `all`); on their own here only the
# first (one stage's own two-file packaging) and the stages `all` leaves out. Running every
# stage twice cost CI ~55 s.
mapfile -t in_all < <(bash scripts/gpu/run.sh list-all)
[ ${#in_all[@]} -gt 0 ] || die "run.sh list-all printed no stages"
declare -A took rcs
bad=0
for s in "${stages[@]}"; do
  if [ "$s" != "${in_all[0]}" ] && [[ " ${in_all[*]} " == *" $s "* ]]; then
    took[$s]=-; rcs[$s]="in all"
    continue
  fi
  echo "==> stage $s (host, GMPRT_GPU_SCALE=$scale)"
  out=$base/out/$s
  mkdir -p "$out"
  t=$SECONDS
  rc=0
  env -u GMPRT_REQUIRE_GPU OUT="$out" GMPRT_RUN_DEVICE=host GMPRT_GPU_SCALE="$scale" \
    GMPRT_BIN_ARCHIVE="$archive" GMPRT_BIN_DIR="$base/bin" \
    bash scripts/gpu/run.sh "$s" || rc=$?
  took[$s]=$((SECONDS - t))
  rcs[$s]=$rc
  [ "$rc" -eq 0 ] || { echo "stage $s: rc=$rc" >&2; bad=$((bad + 1)); }
  # What the device tool would bring back from this call's $OUT.
  problems=()
  [ -f "$out/$s.tar.xz" ] || problems+=("no $s.tar.xz")
  [ -f "$out/$s-summary.txt" ] || problems+=("no $s-summary.txt")
  n=$(find "$out" -type f | wc -l)
  [ "$n" -le 8 ] || problems+=("$n files (at most 8 come back)")
  while IFS= read -r f; do
    rel=${f#"$out"/}
    [[ $(basename "$rel") =~ ^[A-Za-z0-9._-]+$ ]] || problems+=("odd name: $rel")
    depth=$(( $(tr -cd / <<< "$rel" | wc -c) ))
    [ "$depth" -le 2 ] || problems+=("too deep: $rel")
    size=$(stat -c %s "$f")
    [ "$size" -le $((16 * 1024 * 1024)) ] || problems+=("$rel is $size bytes (over 16 MiB)")
  done < <(find "$out" -mindepth 1)
  if [ -f "$out/$s.tar.xz" ]; then
    xz -dc "$out/$s.tar.xz" | tar -tf - > "$base/$s.list" || problems+=("$s.tar.xz does not unpack")
    grep -q "^$s/summary.txt$" "$base/$s.list" || problems+=("$s.tar.xz holds no summary.txt")
  fi
  if [ ${#problems[@]} -gt 0 ]; then
    printf 'stage %s: %s\n' "$s" "${problems[@]}" >&2
    bad=$((bad + 1))
  fi
  [ -f "$out/$s-summary.txt" ] && sed 's/^/    /' "$out/$s-summary.txt"
done

# `run.sh all` (stages 0-4 and 6 in one call): only the two combined files come back, the archive
# holds every stage's folder with its summary, and the combined summary has every stage's.
echo "==> run.sh all (host, GMPRT_GPU_SCALE=$scale)"
out=$base/out/all
mkdir -p "$out"
t=$SECONDS
rc=0
env -u GMPRT_REQUIRE_GPU OUT="$out" GMPRT_RUN_DEVICE=host GMPRT_GPU_SCALE="$scale" \
  GMPRT_BIN_ARCHIVE="$archive" GMPRT_BIN_DIR="$base/bin" \
  bash scripts/gpu/run.sh all || rc=$?
problems=()
[ "$rc" -eq 0 ] || problems+=("rc=$rc")
got=$(cd "$out" && find . -type f -printf '%f\n' | sort | tr '\n' ' ')
[ "$got" = "all-summary.txt all.tar.xz " ] || problems+=("files: $got (want all-summary.txt all.tar.xz)")
if [ -f "$out/all.tar.xz" ]; then
  # Listed once into a file: `grep -q` on the pipe would close it early (SIGPIPE under pipefail).
  xz -dc "$out/all.tar.xz" | tar -tf - > "$base/all.list" || problems+=("all.tar.xz does not unpack")
  for s in "${in_all[@]}"; do
    grep -q "^\./$s/summary.txt$" "$base/all.list" || problems+=("all.tar.xz holds no $s/summary.txt")
    grep -q "^stage $s " "$out/all-summary.txt" || problems+=("all-summary.txt has no stage $s")
  done
fi
if [ ${#problems[@]} -gt 0 ]; then
  printf 'run.sh all: %s\n' "${problems[@]}" >&2
  bad=$((bad + 1))
fi
echo "run.sh all: $((SECONDS - t)) s, rc=$rc, files: $got"

echo
echo "dry run (host, GMPRT_GPU_SCALE=$scale, --profile $profile): build+archive ${build_s}s, archive $(stat -c %s "$archive") bytes"
for s in "${stages[@]}"; do
  if [ "${rcs[$s]}" = "in all" ]; then
    printf '  %-12s %s\n' "$s" "checked in run.sh all: $(grep -E "^stage $s: " "$base/out/all/all-summary.txt" || echo 'no summary line')"
    continue
  fi
  printf '  %-12s %4ss  rc=%s  %s\n' "$s" "${took[$s]}" "${rcs[$s]}" "$(cd "$base/out/$s" && find . -type f -printf '%f(%s B) ' | sort)"
done
echo "total $((SECONDS - T0)) s"
if [ "$bad" -gt 0 ]; then
  echo "failed steps:" >&2
  grep -H -E '^[A-Za-z0-9._-]+ +rc=[1-9]' "$base"/out/*/*-summary.txt >&2 || true
  die "$bad stage(s) failed or would not come back (above)"
fi
echo "dry run passed"
