#!/usr/bin/env python3
"""Lists the executables in cargo's JSON output (`--message-format=json...`), one per line:

    <package dir> <kind> <target name> <test> <executable>

`kind` is `lib` for a library's unit tests, else the target's kind (`bin`, `test`, `bench`,
`example`); `test` is 1 when cargo compiled the target as a test harness, else 0. Lines of the
files that are not JSON (cargo's rendered diagnostics) are skipped. Shared by
`scripts/gpu/build.sh` (what goes in the GPU archive) and `.ci/run` (the loom models' binaries).

usage: python3 scripts/cargo-executables.py CARGO_JSON...
"""
import json
import os
import sys

for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        t = m["target"]
        kind = "lib" if "lib" in t["kind"] else t["kind"][0]
        test = int(bool(m["profile"]["test"]))
        print(os.path.dirname(m["manifest_path"]), kind, t["name"], test, m["executable"])
