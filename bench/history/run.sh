#!/usr/bin/env bash
# The 10,000-run benchmark of `dbscope history` (issue 33): a filter must answer in <= 100 ms and a
# rebuild from the manifests take <= 10 s. Makes one real run (1,000 commits on SQLite), copies it to
# N run directories with varied workload names, start times and settings, then times
# `history --rebuild` and a filtered `history --json` (wall clock, whole process).
# Usage: bench/history/run.sh [N] [DBSCOPE]
set -euo pipefail
N=${1:-10000}
D=${2:-$(pwd)/target/release/dbscope}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
"$D" run commit --ops 1000 --out seed >/dev/null 2>&1
rm -f seed/dbscope.sqlite*
mkdir runs
python3 - "$N" <<'PY'
import json, shutil, sys, datetime
n = int(sys.argv[1])
m = json.load(open("seed/manifest.json"))
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
for i in range(n):
    d = f"runs/r{i:05d}"
    shutil.copytree("seed", d)
    m["workload"]["name"] = f"w{i % 20}"
    m["started_utc"] = (t0 + datetime.timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
    if m.get("target"):
        m["target"]["settings_requested"] = [["synchronous", "off" if i % 2 else "full"]]
    json.dump(m, open(f"{d}/manifest.json", "w"))
PY
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
echo "runs: $N"
echo "rebuild (s): $(t "$D" history runs --rebuild)"
for i in 1 2 3; do
  echo "filter --workload w7 --where synchronous=off --json (s): $(t "$D" history runs --workload w7 --where synchronous=off --json)"
done
echo "list all, text (s): $(t "$D" history runs)"
