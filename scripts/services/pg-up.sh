#!/usr/bin/env bash
# pg-up.sh DIR [PORT] - a private PostgreSQL 15 server for tests, kept entirely in DIR.
#
# Listens on 127.0.0.1:PORT (a free port when PORT is omitted) and on a unix socket in DIR, with fsync on (tests
# see the durability cost real deployments pay). The superuser `postgres` needs no password on the socket (DIR
# is mode 0700) and a random one over TCP. As root, the server runs as the `postgres` user (PostgreSQL refuses
# root): every parent of DIR must then be searchable by that user.
#
# On success prints one line on stdout, also written to DIR/pg.env:
#   EDGE_TEST_DATABASE_URL=postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres
# If DIR holds a cluster stopped by `pg-down.sh DIR --keep-data`, starts it again with its data and its port.
# On failure: exit 1, the server log's tail on stderr.
#
# env: PG_BIN (default /usr/lib/postgresql/15/bin), EDGE_SERVICES_INSTALL=0 to never apt-get install,
#      PG_READY_TIMEOUT (seconds, default 60).
set -euo pipefail
SCRIPT=pg-up
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: pg-up.sh DIR [PORT]" >&2; exit 2; }
PORT=${2:-}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
READY_TIMEOUT=${PG_READY_TIMEOUT:-60}

if [ ! -x "$PG_BIN/initdb" ] || [ ! -x "$PG_BIN/pg_ctl" ] || [ ! -x "$PG_BIN/postgres" ]; then
  install_packages postgresql || exit 1
fi

DIR=$(absolute_dir "$1") || exit 1
DATA=$DIR/data
# The socket is DIR/.s.PGSQL.PORT; a unix socket path holds at most 107 bytes.
if [ $((${#DIR} + 17)) -gt 107 ]; then
  log "DIR is too long for a unix socket path (${#DIR} characters, at most 90): $DIR"
  exit 1
fi

if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || { log "no 'postgres' user to run the server as (apt-get install postgresql creates it)"; exit 1; }
  chown postgres: "$DIR"
  as_server() { runuser -u postgres -- "$@"; }
  if ! as_server test -w "$DIR"; then
    log "the postgres user cannot write $DIR: make its parent directories searchable (chmod o+x)"
    exit 1
  fi
else
  as_server() { "$@"; }
fi
chmod 0700 "$DIR"

if [ -f "$DATA/PG_VERSION" ]; then
  if as_server "$PG_BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; then
    log "$DIR already runs a server; pg-down.sh $DIR first"
    exit 1
  fi
  [ -f "$DIR/pg.env" ] || { log "$DIR holds a cluster without pg.env: not one of ours"; exit 1; }
  PASSWORD=$(sed -n 's|.*://postgres:\([^@]*\)@.*|\1|p' "$DIR/pg.env")
  [ -n "$PORT" ] || PORT=$(sed -n 's|.*@127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$DIR/pg.env")
else
  rm -rf "$DATA" "$DIR/pg.env" "$DIR/postgres.log"
  PASSWORD=$(random_hex 16)
  pwfile=$(mktemp "$DIR/.pw.XXXXXX")
  echo "$PASSWORD" >"$pwfile"
  [ "$(id -u)" = 0 ] && chown postgres: "$pwfile"
  # --no-sync only skips syncing initdb's own files (a throwaway cluster); the server itself runs with fsync on.
  if ! as_server "$PG_BIN/initdb" -D "$DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --pwfile="$pwfile" -E UTF8 --no-locale --no-sync >"$DIR/initdb.log" 2>&1; then
    rm -f "$pwfile"
    log "initdb failed:"
    tail -n 20 "$DIR/initdb.log" >&2
    exit 1
  fi
  rm -f "$pwfile" "$DIR/initdb.log"
  echo "include_if_exists = 'edge-test.conf'" >>"$DATA/postgresql.conf"
fi

chose_port=0
[ -n "$PORT" ] || { PORT=$(pick_free_ports) && chose_port=1; } || exit 1
for attempt in 1 2 3; do
  as_server tee "$DATA/edge-test.conf" >/dev/null <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
unix_socket_permissions = 0700
fsync = on
synchronous_commit = on
max_connections = 200
logging_collector = off
CONF
  if as_server "$PG_BIN/pg_ctl" start -D "$DATA" -l "$DIR/postgres.log" -w -t "$READY_TIMEOUT" >/dev/null 2>&1; then
    line="EDGE_TEST_DATABASE_URL=postgres://postgres:$PASSWORD@127.0.0.1:$PORT/postgres"
    (umask 077 && echo "$line" >"$DIR/pg.env")
    echo "$line"
    exit 0
  fi
  # pg_ctl gave up: make sure no half-started server stays behind.
  as_server "$PG_BIN/pg_ctl" stop -D "$DATA" -m immediate >/dev/null 2>&1 || true
  if [ "$chose_port" = 1 ] && [ "$attempt" -lt 3 ] && grep -q "could not bind" "$DIR/postgres.log" 2>/dev/null; then
    log "port $PORT was taken meanwhile, trying another"
    PORT=$(pick_free_ports) || exit 1
    continue
  fi
  break
done
log "PostgreSQL did not start; the end of $DIR/postgres.log:"
tail -n 20 "$DIR/postgres.log" >&2 2>/dev/null || true
exit 1
