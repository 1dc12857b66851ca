#!/bin/sh
# The built-in scripts as pgbench prints them (`--show-script`, no server needed).
# Made with pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1); run from this directory.
set -e
pgbench --version
for name in tpcb-like simple-update select-only; do
    pgbench --show-script="$name" 2> "$name.txt"
done
