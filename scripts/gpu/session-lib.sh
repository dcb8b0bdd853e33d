# Helpers for a device call of one's own (a session's A/B beside run.sh's stages), so each such
# script is only its steps. Source it from the repository root, on the GPU machine:
#
#   . scripts/gpu/session-lib.sh
#   session_start NAME LIMIT          # unpacks devbin/gmprt-gpu-bin.tar.xz (and devbin/base.tar.xz
#                                     # when carried) into devbin/; B=devbin/bin, O=devbin/basebin
#   STEP_KEYS='^3\. one launch|batch time'   # optional: lines of each step copied into the summary
#   step NAME TIMEOUT CMD...          # CMD's output in NAME.txt, then rc; skipped when < 10 s of
#                                     # LIMIT would be left
#   session_end
#
# After every step, $OUT/summary.txt (the header, each step's time and rc and key lines) and
# $OUT/steps.tar.xz (every step's whole output) are written whole, then renamed: 2 files of the
# 8 a call may bring back, and a call killed midway keeps every step that finished.
# LD_LIBRARY_PATH is set as run.sh sets it (never a stubs directory).

session_start() {  # session_start NAME LIMIT
  SESSION_NAME=$1 SESSION_LIMIT=$2 SESSION_T0=$SECONDS SESSION_OUT=$OUT
  W=$(mktemp -d "/tmp/session-$1.XXXXXX")
  export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  mkdir -p devbin && tar -C devbin -xJf devbin/gmprt-gpu-bin.tar.xz
  if [ -f devbin/base.tar.xz ]; then tar -C devbin -xJf devbin/base.tar.xz; fi
  B=devbin/bin O=devbin/basebin
  { echo "$SESSION_NAME $(date -u +%FT%TZ) limit=${SESSION_LIMIT}s"; sed -n 2p devbin/MANIFEST
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1; nproc; } > "$W/session.txt"
}

session_pack() {
  cp "$W/session.txt" "$SESSION_OUT/.s" && mv "$SESSION_OUT/.s" "$SESSION_OUT/summary.txt"
  tar -C "$W" -cf - . | xz -T0 -3 > "$SESSION_OUT/.t" && mv "$SESSION_OUT/.t" "$SESSION_OUT/steps.tar.xz"
}

step() {  # step NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  local left=$((SESSION_LIMIT - (SECONDS - SESSION_T0) - 10))
  if [ "$left" -lt 10 ]; then echo "skipped $name: ${left}s left" >> "$W/session.txt"; return; fi
  [ "$to" -le "$left" ] || to=$left
  local t=$SECONDS
  { echo "\$ $*"; timeout "$to" "$@" 2>&1; echo "rc=$?"; } > "$W/$name.txt"
  echo "step $name: $((SECONDS - t)) s, $(tail -1 "$W/$name.txt")" >> "$W/session.txt"
  if [ -n "${STEP_KEYS:-}" ]; then grep -E "$STEP_KEYS" "$W/$name.txt" | head -12 >> "$W/session.txt"; fi
  session_pack
}

session_end() {
  echo "session done in $((SECONDS - SESSION_T0)) s" >> "$W/session.txt"
  session_pack
}
