#!/usr/bin/env bash
# Builds every binary the GPU runs (scripts/gpu/run.sh) need, on the development machine (the
# GPU machine has no Rust), and packs them into ONE archive to carry to the device tool:
#
#   bash scripts/gpu/build.sh                      # -> devbin/gmprt-gpu-bin.tar.xz (≤ 60 MiB)
#   <device run, carry ["devbin/gmprt-gpu-bin.tar.xz"]> 'bash scripts/gpu/run.sh 0-env'
#
# Options:
#   --profile P   cargo profile to build with [default: gpu = release without debug info,
#                 stripped (root Cargo.toml)]; `release` keeps debug info and does not fit.
#   --archive F   where the archive goes [default: devbin/gmprt-gpu-bin.tar.xz]
#   --no-size-limit   report the size only (dry runs with a profile that keeps debug info)
#   --strip       strip each copied binary (`strip --strip-all`): with `--profile release`
#                 this packs what `--profile gpu` would (same code, no debug info) from the
#                 release build CI has already made, so the size check still applies
#
# What goes in (bin/ inside the archive, plus MANIFEST with the commit and sha256 sums):
#   examples  option_screener matmul_ladder monte_carlo_pi explain million_tasks amdahl trading_desk spread
#             latency_ladder
#   test-offload-*, test-kernels-*   every test binary of gmprt-offload and gmprt-kernels
#                                    (test-offload-cuda: the libtest-mimic CUDA harness)
#   bench-offload, bench-scheduler, bench-net (root crate), bench-model (gmprt-offload)
#   million_tasks_go   the Go peer of million_tasks (benches/go/million_tasks, for
#                      scripts/scaling.sh; the GPU machine has no Go), only if `go` is on PATH
# Any cargo error stops the script with cargo's own message; so does an archive over 60 MiB.
# A failed or skipped Go build is reported and leaves million_tasks_go out (scaling.sh then
# skips Go).
set -euo pipefail
cd "$(dirname "$0")/../.."

profile=gpu
size_check=1
strip_copies=0
archive=devbin/gmprt-gpu-bin.tar.xz
while [ $# -gt 0 ]; do
  case $1 in
    --profile) profile=${2:?--profile needs a value}; shift 2 ;;
    --archive) archive=${2:?--archive needs a value}; shift 2 ;;
    --no-size-limit) size_check=0; shift ;;
    --strip) strip_copies=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument '$1' (known: --profile P, --archive F, --no-size-limit, --strip)" >&2; exit 2 ;;
  esac
done
limit_mib=60
examples=(option_screener matmul_ladder monte_carlo_pi explain million_tasks amdahl trading_desk spread latency_ladder)

die() { echo "build.sh: error: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read cargo's JSON"
command -v xz >/dev/null || die "xz is needed to pack the archive"
[ "$strip_copies" = 0 ] || command -v strip >/dev/null || die "--strip needs strip (binutils)"

stage=$(mktemp -d "${TMPDIR:-/tmp}/gmprt-gpu-build.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"

# cargo <args> --no-run/--message-format: stdout is JSON (one message a line), diagnostics are
# rendered to stderr as usual; a failing cargo fails this function (and the script) loudly.
# Prints "<name> <executable>" for every executable artifact, name = <prefix><crate dir>-<target>
# with prefix `test-` (`lib` for a library's unit tests), <prefix><target> otherwise.
artifacts() {
  local prefix=$1; shift
  local json="$stage/cargo.json"
  echo "+ cargo $* --profile $profile --locked --message-format=json-render-diagnostics" >&2
  if ! cargo "$@" --profile "$profile" --locked --message-format=json-render-diagnostics > "$json"; then
    die "cargo $* failed (its error is above)"
  fi
  python3 scripts/cargo-executables.py "$json" | awk -v p="$prefix" '{
    name = $3
    if (p == "test-") { crate = $1; sub(/.*\//, "", crate); name = crate "-" ($2 == "lib" ? "lib" : $3) }
    print p name, $5
  }'
}

copy_all() {  # reads "<name> <exe>" lines; copies each to bin/<name>, refusing duplicates
  local name exe n=0
  while read -r name exe; do
    [ -e "$stage/bin/$name" ] && die "two binaries named $name"
    cp "$exe" "$stage/bin/$name"
    if [ "$strip_copies" = 1 ]; then
      strip --strip-all "$stage/bin/$name" || die "strip $name failed"
    fi
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || die "cargo reported no executables"
}

t0=$SECONDS
# Cargo unifies features over the packages a call selects, so naming packages (`-p
# gmprt-offload -p gmprt-kernels`, or `--workspace --exclude ...`) builds the runtime and
# everything above it with other features than CI's `cargo test --workspace --release` does, and
# rebuilds them: CI's dry run, which packs with --profile release, spent 103 s in these builds.
# So every call here selects the whole workspace; the test binaries come from the test step's
# own call, which CI has already built (a from-scratch GPU build compiles the runtime's and the
# root crate's tests too, about a minute more).
# Examples (root crate): only the ones the runs use are kept. (`cargo test` builds examples
# as test harnesses, which do not run `main`: these come from `cargo build`.)
artifacts "" build --workspace "${examples[@]/#/--example=}" > "$stage/examples.txt"
copy_all < "$stage/examples.txt"
for e in "${examples[@]}"; do [ -x "$stage/bin/$e" ] || die "example $e was not built"; done

# Every test binary of gmprt-offload and gmprt-kernels (lib unit tests + integration tests).
artifacts test- test --workspace --no-run > "$stage/workspace-tests.txt"
grep -E '^test-(offload|kernels)-' "$stage/workspace-tests.txt" > "$stage/tests.txt" || true
copy_all < "$stage/tests.txt"
[ -x "$stage/bin/test-offload-cuda" ] || die "the CUDA test harness (offload/tests/cuda/) was not built"

# Benches: offload, scheduler and net (root crate), model (gmprt-offload); the workspace's other
# bench targets are built (see above) but not packed. `--benches`: the bench targets only, not
# the libraries' unit tests compiled once more as bench harnesses (nothing runs those: they hold
# no benchmarks, and `cargo test` runs the tests), which cost CI ~60 s of compiling.
artifacts bench- bench --workspace --benches --no-run > "$stage/benches-all.txt"
grep -E '^bench-(offload|scheduler|net|model) ' "$stage/benches-all.txt" > "$stage/benches.txt" || true
copy_all < "$stage/benches.txt"
for b in offload scheduler net model; do [ -x "$stage/bin/bench-$b" ] || die "bench $b was not built"; done
echo "cargo builds: $((SECONDS - t0)) s" >&2

# The Go peer of million_tasks, static (no cgo) and stripped, for scripts/scaling.sh.
if command -v go >/dev/null; then
  if (cd benches/go/million_tasks && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$stage/bin/million_tasks_go" .); then
    go_line="go: million_tasks_go built with $(go version)"
  else
    rm -f "$stage/bin/million_tasks_go"
    go_line="go: build of benches/go/million_tasks FAILED (error above), million_tasks_go left out"
  fi
else
  go_line="go: not on PATH, Go skipped: million_tasks_go left out (scripts/scaling.sh will skip Go)"
fi
echo "build.sh: $go_line" >&2

commit=$(git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
{
  echo "gmprt GPU binaries"
  echo "commit $commit (tracked files changed at build time: $dirty)"
  echo "profile $profile$([ "$strip_copies" = 1 ] && echo ' (copies stripped)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(rustc --version 2>/dev/null || echo rustc ?))"
  echo "$go_line"
  echo "sha256:"
  (cd "$stage/bin" && sha256sum -- *)
} > "$stage/MANIFEST"

mkdir -p "$(dirname "$archive")"
rm -f "$archive"
raw=$(du -sb "$stage/bin" | cut -f1)
# xz -3, not the default -6: on the 2-core VM the 64 MiB of binaries pack in 10 s to 14.4 MB
# against 22 s to 10.0 MB (2026-11-28), and the carry limit (64 MiB in all) has room for the
# difference; unpacking on the GPU machine takes about a second either way.
tar -C "$stage" -cf - MANIFEST bin | xz -T0 -3 > "$archive.tmp"
mv "$archive.tmp" "$archive"
size=$(stat -c %s "$archive")
ls -la "$stage/bin" >&2
awk -v a="$archive" -v n="$(find "$stage/bin" -type f | wc -l)" -v r="$raw" -v s="$size" -v l="$limit_mib" \
  'BEGIN { printf "archive %s: %d binaries, %.1f MiB unpacked, %.1f MiB packed (limit %d MiB)\n", a, n, r / 1048576, s / 1048576, l }'
if [ "$size" -gt $((limit_mib * 1024 * 1024)) ]; then
  [ "$size_check" = 1 ] || { echo "build.sh: over $limit_mib MiB (not checked: --no-size-limit)" >&2; exit 0; }
  die "$archive is $size bytes, over the $limit_mib MiB that can be carried to the GPU machine"
fi
