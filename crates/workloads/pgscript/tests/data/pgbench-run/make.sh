#!/bin/sh
# What pgbench sends for ref.sql, in simple and extended mode, from its --debug log ("client 0
# sending …"), one client, one transaction, --random-seed=42.
# Made with pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1) against PostgreSQL 15.18 on a
# local socket; run from this directory with PGHOST/PGPORT/PGUSER pointing at a scratch server:
#   PGHOST=/tmp PGPORT=5499 PGUSER=postgres ./make.sh
set -e
pgbench --version >&2
for mode in simple extended; do
    pgbench -n -t 1 -M "$mode" --random-seed=42 --debug -f ref.sql postgres 2> "$mode.log" > /dev/null
done
