#!/usr/bin/env bash
# Builds everything the GPU validation (issue 6) runs, on the development machine (the GPU
# machine has no Rust), into devbin/ (ignored by git; pass it to the device tool as `carry`).
#   bash scripts/gpu/build.sh && <device run> 'bash scripts/gpu/run.sh'
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf devbin && mkdir -p devbin
cargo build --release --locked --examples
for e in option_screener matmul_ladder monte_carlo_pi explain million_tasks; do
  cp "target/release/examples/$e" devbin/
done
# Test and bench executables: cargo prints their paths as JSON artifacts.
list() {
  cargo "$@" --release --locked --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])'
}
list test -p gmprt-offload -p gmprt-kernels | while read -r name exe; do cp "$exe" "devbin/test-$name"; done
list bench --bench offload --bench scheduler | while read -r name exe; do cp "$exe" "devbin/bench-$name"; done
ls -la devbin
