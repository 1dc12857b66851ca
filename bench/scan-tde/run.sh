#!/usr/bin/env bash
# Issue 31's benchmark: dbscope's encrypted scans side by side with `openssl speed` on the same
# machine. For each cache state (cold, os, engine) and AES-NI on/off: the median scan time clear and
# encrypted (`dbscope run scan --matrix`), and the decrypt rate the extra time implies
# (file MB / (encrypted - clear seconds)) as a fraction of OpenSSL's AES-256-CBC decrypt rate with
# and without the same OPENSSL_ia32cap mask — the physical limit of the experiment.
# Also: what the SQLCipher build costs the default `run commit` (default binary vs sqlcipher binary).
# Usage: bench/scan-tde/run.sh DBSCOPE_DEFAULT DBSCOPE_SQLCIPHER [ROWS] [OPS]
set -euo pipefail
DEF=${1:?default release binary}
SQLC=${2:?sqlcipher release binary}
ROWS=${3:-1000000}
OPS=${4:-7}
MASK='~0x200000200000000:~0x60000000000'
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
echo "## machine"
uname -a
grep -m1 'model name' /proc/cpuinfo
grep -m1 -o -w -E 'aes|vaes|pclmulqdq' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
nproc; openssl version
echo
echo "## openssl speed -evp aes-256-cbc -decrypt (16 KiB blocks: MB/s)"
for m in on off; do
  if [ $m = off ]; then export OPENSSL_ia32cap="$MASK"; else unset OPENSSL_ia32cap; fi
  r=$(openssl speed -elapsed -seconds 2 -bytes 16384 -evp aes-256-cbc -decrypt 2>/dev/null | awk '/^AES-256-CBC/ {print $2}')
  echo "aes-ni $m: ${r%k} kB/s"
  echo "$m ${r%k}" >> openssl.txt
done
unset OPENSSL_ia32cap
echo
echo "## scan matrix: $ROWS rows x 100 B, $OPS scans per cell"
export DBSCOPE_SQLITE_KEY=bench-key-not-secret
"$SQLC" run scan --matrix --target sqlcipher:"$W"/enc.db --rows "$ROWS" --ops "$OPS" --out "$W"/tde 2>/dev/null | tee matrix.txt
for aes in on off; do for cache in cold os engine; do
  for kind in clear encrypted; do
    "$SQLC" report "$W/tde/$kind-aesni-$aes-$cache" --json > "$kind-$aes-$cache.json"
  done
done; done
python3 - <<'PY'
import json
rates = {l.split()[0]: float(l.split()[1]) * 1e3 / 1e6 for l in open("openssl.txt")}  # MB/s
print("\n## decrypt rate implied by the scans vs OpenSSL's (MB/s; fraction of OpenSSL)")
# Median and minimum scan time: on a shared machine the minimum is the least disturbed scan.
print("stat    cache   aes-ni  clear_ms  enc_ms  enc/clear  file_MB  implied_MB/s  openssl_MB/s  fraction")
for stat in ["median", "min"]:
    for aes in ["on", "off"]:
        for cache in ["cold", "os", "engine"]:
            r = {k: json.load(open(f"{k}-{aes}-{cache}.json")) for k in ["clear", "encrypted"]}
            t = {k: next(e for e in v["events"] if e["name"] == "scan")["summary_us"][stat] / 1e3 for k, v in r.items()}
            mb = r["encrypted"]["scan"]["file_bytes"] / 1e6
            extra = (t["encrypted"] - t["clear"]) / 1e3
            implied = mb / extra if extra > 0 else float("nan")
            print(f"{stat:<7} {cache:<7} {aes:<6} {t['clear']:>8.1f} {t['encrypted']:>7.1f} {t['encrypted'] / t['clear']:>9.2f} {mb:>8.1f} {implied:>13.0f} {rates[aes]:>13.0f} {implied / rates[aes]:>9.2f}")
PY
echo
echo "## load average (the machine is shared: figures move with it)"; cat /proc/loadavg
echo
echo "## run commit: default build vs sqlcipher build (4 sessions, 5 s, 3 runs each; commits/s)"
for i in 1 2 3; do
  for b in default sqlcipher; do
    bin=$DEF; [ $b = sqlcipher ] && bin=$SQLC
    "$bin" run commit --sessions 4 --duration 5s --out "c-$b-$i" -q >/dev/null
    "$bin" report "c-$b-$i" --json | python3 -c "import json,sys; r=json.load(sys.stdin); e=next(e for e in r['events'] if e['name']=='commit'); print('$b run $i', round(e['throughput_per_s']), 'commits/s, median', round(e['summary_us']['median'],1), 'us')"
  done
done
