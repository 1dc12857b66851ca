#!/bin/sh
# Makes the reference data of tests/pgbench_reference.rs from a real pgbench and PostgreSQL.
#
# Run as a user that may run PostgreSQL (not root), from this directory:
#   PGBIN=/usr/lib/postgresql/15/bin sh make_reference.sh
# It starts a throw-away server on $PORT (default 5528) in a temporary directory, writes the
# files below, and stops the server. Inputs: expr_cases.txt, expr_errors.txt,
# expr_syntax_errors.txt (one expression a line). Outputs:
#   pgbench_version.txt      the versions that answered
#   prng_setseed.tsv         fseed, i, random() after SELECT setseed(fseed) (PostgreSQL's own
#                            pg_prng_fseed + pg_prng_double)
#   expr_values.tsv          expression, the text pgbench substitutes for `:e` after `\set e EXPR`
#                            (all of expr_cases.txt in one script, one client, in order)
#   expr_errors.tsv          expression, pgbench's error message when `\set e EXPR` fails
#   expr_syntax_errors.tsv   expression, pgbench's message, 0-based column of its caret in
#                            the line `\set e EXPR`
#   samples_*.txt            10 000 draws of one random function (one client): count, sum,
#                            position-weighted sum, the first 500 in order, count per value
#   zipfian_s05.txt          what pgbench says to random_zipfian(…, 0.5)
# Every pgbench run uses --random-seed=$SEED (12345).
set -eu
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${PORT:-5528}
SEED=12345
OUT=$(pwd)
TMP=$(mktemp -d)
export PGHOST=$TMP PGPORT=$PORT PGDATABASE=postgres PGUSER=postgres
"$PGBIN/initdb" -D "$TMP/db" -A trust -U postgres >/dev/null
"$PGBIN/pg_ctl" -D "$TMP/db" -o "-k $TMP -p $PORT -c listen_addresses=''" -l "$TMP/log" -w start >/dev/null
trap '"$PGBIN/pg_ctl" -D "$TMP/db" -m fast stop >/dev/null; rm -rf "$TMP"' EXIT
PSQL="$PGBIN/psql -X -q -At -v ON_ERROR_STOP=1"
PGBENCH="$PGBIN/pgbench -n -M simple -c 1 -j 1 --random-seed=$SEED"
# -D variables the cases read (text, converted as pgbench converts it)
DEFINES="-D txt=2.5e1 -D txt2=+12 -D b=yes -D nb=of -D n=null -D big=9223372036854775807 -D s=abc"

{ "$PGBIN/pgbench" --version; $PSQL -c "select version()"; } >"$OUT/pgbench_version.txt"

# PostgreSQL's generator itself: setseed() is pg_prng_fseed, random() pg_prng_double
: >"$OUT/prng_setseed.tsv"
for f in 0.5 -0.25 0 1 -1 0.123456789; do
    $PSQL -c "select setseed($f)" -c "select '$f', i, random() from generate_series(1, 20) i" \
        | grep -v '^$' | tr '|' '\t' >>"$OUT/prng_setseed.tsv"
done

$PSQL -c "create table expr_out (id int primary key, v text)" \
      -c "create table samples (id bigserial primary key, v bigint)"

# every case in one script, in order: random*() calls draw from one client generator
n=0
: >"$TMP/cases.sql"
while IFS= read -r e; do
    n=$((n + 1))
    printf '\\set e%d %s\nINSERT INTO expr_out VALUES (%d, '"'"':e%d'"'"');\n' "$n" "$e" "$n" "$n" >>"$TMP/cases.sql"
done <"$OUT/expr_cases.txt"
# :e1 in the cases refers to the first case's value
$PGBENCH -t 1 $DEFINES -f "$TMP/cases.sql" >/dev/null 2>"$TMP/cases.err" || { cat "$TMP/cases.err" >&2; exit 1; }
$PSQL -c "select v from expr_out order by id" >"$TMP/values"
if [ "$(wc -l <"$TMP/values")" -ne "$n" ]; then
    echo "pgbench did not answer every case:" >&2
    cat "$TMP/cases.err" >&2
    exit 1
fi
paste "$OUT/expr_cases.txt" "$TMP/values" >"$OUT/expr_values.tsv"

# errors: one run each; the first "error:" line is the evaluation's message
: >"$OUT/expr_errors.tsv"
while IFS= read -r e; do
    printf '\\set e %s\n' "$e" >"$TMP/one.sql"
    $PGBENCH -t 1 $DEFINES -f "$TMP/one.sql" >/dev/null 2>"$TMP/one.err" || true
    msg=$(grep -m1 'error: ' "$TMP/one.err" | sed 's/^pgbench: error: //')
    printf '%s\t%s\n' "$e" "$msg" >>"$OUT/expr_errors.tsv"
done <"$OUT/expr_errors.txt"

: >"$OUT/expr_syntax_errors.tsv"
while IFS= read -r e; do
    printf '\\set e %s\n' "$e" >"$TMP/one.sql"
    $PGBENCH -t 1 -f "$TMP/one.sql" >/dev/null 2>"$TMP/one.err" || true
    # "pgbench: error: FILE:1: MESSAGE in command "set"", the line, then the caret
    msg=$(grep -m1 'error: ' "$TMP/one.err" | sed -e 's/^pgbench: error: [^:]*:1: //' -e 's/ in command "set"$//')
    caret=$(grep -m1 'error found here' "$TMP/one.err" | sed 's/\^.*//' | wc -c)
    printf '%s\t%s\t%d\n' "$e" "$msg" "$((caret - 1))" >>"$OUT/expr_syntax_errors.tsv"
done <"$OUT/expr_syntax_errors.txt"

# 10 000 draws: 100 transactions of 100 \set and one INSERT of the 100 values
sample() { # name, expression
    $PSQL -c "truncate samples" -c "alter sequence samples_id_seq restart"
    : >"$TMP/s.sql"
    values=""
    for k in $(seq 1 100); do
        printf '\\set v%d %s\n' "$k" "$2" >>"$TMP/s.sql"
        values="$values${values:+, }(:v$k)"
    done
    printf 'INSERT INTO samples (v) VALUES %s;\n' "$values" >>"$TMP/s.sql"
    $PGBENCH -t 100 -f "$TMP/s.sql" >/dev/null 2>&1
    $PSQL -c "select v from samples order by id" >"$TMP/raw"
    # compact: the count, sum and position-weighted sum of the whole sequence (exact in awk's
    # doubles here), its first 500 values in order, then count per value when at most 1000
    # distinct values
    awk -v expr="$2" -v seed="$SEED" '
        { v[NR] = $1; s += $1; w += NR * $1; c[$1]++ }
        END {
            print "# " expr ", pgbench --random-seed=" seed ", one client, in draw order"
            printf "n %d\nsum %.0f\nweighted %.0f\nfirst", NR, s, w
            for (i = 1; i <= 500 && i <= NR; i++) printf " %s", v[i]
            print ""
            k = 0; for (x in c) k++
            if (k <= 1000) for (x in c) print "count " x " " c[x]
        }' "$TMP/raw" >"$OUT/samples_$1.txt"
}
sample uniform "random(1, 1000000)"
sample zipfian_s1.5 "random_zipfian(1, 100, 1.5)"
sample zipfian_s1.01 "random_zipfian(1, 100, 1.01)"
sample exponential_p2.5 "random_exponential(1, 100, 2.5)"
sample exponential_p10 "random_exponential(1, 100, 10)"
sample gaussian_p2.5 "random_gaussian(1, 100, 2.5)"
sample gaussian_p5 "random_gaussian(1, 100, 5)"

printf '\\set v random_zipfian(1, 100, 0.5)\n' >"$TMP/z.sql"
$PGBENCH -t 1 -f "$TMP/z.sql" 2>&1 >/dev/null | grep -m1 'error: ' >"$OUT/zipfian_s05.txt" || true
