# Shared by bench scripts: start a throwaway PostgreSQL cluster on a Unix socket, as the
# unprivileged `postgres` user when run as root. Sets PGBIN, PGSOCK, PGPORT_BENCH, BENCH_URI.
# PG_LISTEN=127.0.0.1 makes it listen on TCP as well (default: its Unix socket only).
pg_find_bin() {
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then pg_config --bindir; return; fi
  local d; d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  echo "PostgreSQL server binaries not found: apt-get install postgresql" >&2; return 1
}

pg_start() {
  PGBIN=$(pg_find_bin) || exit 1
  PGTMP=$(mktemp -d /tmp/dbscope-bench-pg.XXXXXX)
  PGSOCK="$PGTMP/sock"; mkdir -p "$PGSOCK"
  PGPORT_BENCH=${PGPORT_BENCH:-55439}
  local as=()
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$PGTMP"; as=(runuser -u postgres --); fi
  "${as[@]}" "$PGBIN/initdb" -D "$PGTMP/data" -U bench -A trust >/dev/null
  "${as[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/log" -w start \
    -o "-k $PGSOCK -p $PGPORT_BENCH -c listen_addresses='${PG_LISTEN:-}' -c max_connections=100" >/dev/null
  trap pg_stop EXIT
  BENCH_URI="postgres://bench@/postgres?host=$PGSOCK&port=$PGPORT_BENCH"
  PG_VERSION=$("$PGBIN/postgres" --version)
}

pg_stop() {
  local as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PGTMP"
}

bench_env() {
  echo "host:     $(uname -a)"
  echo "cpus:     $(nproc)   memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "dbscope:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}
