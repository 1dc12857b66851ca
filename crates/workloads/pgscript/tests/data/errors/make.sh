#!/bin/sh
# pgbench's own error for each bad script here (pgbench reads -f scripts before it connects, so
# no server is needed). Output: one "== FILE" header per script, then pgbench's stderr.
# Made with pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1); run from this directory.
set -e
pgbench --version >&2
for f in *.sql; do
    echo "== $f"
    pgbench -f "$f" -t 1 2>&1 || true
done > expected.txt
