#!/usr/bin/env bash
# pg-down.sh DIR [--keep-data] [--immediate] - stop the server pg-up.sh started in DIR and remove DIR.
#   --keep-data  only stop it: `pg-up.sh DIR` starts it again with the same data, port and password
#   --immediate  stop without a clean shutdown (as a crash would), instead of PostgreSQL's "fast" mode
# Idempotent: a DIR that is missing or holds no running server is fine.
set -uo pipefail
SCRIPT=pg-down
. "$(dirname "$0")/lib.sh"

DIR=${1:?usage: pg-down.sh DIR [--keep-data] [--immediate]}
shift
keep=0 mode=fast
for arg in "$@"; do
  case "$arg" in
    --keep-data) keep=1 ;;
    --immediate) mode=immediate ;;
    *) echo "usage: pg-down.sh DIR [--keep-data] [--immediate]" >&2; exit 2 ;;
  esac
done
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)
DATA=$DIR/data
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

# The postmaster's pid is the first line of DATA/postmaster.pid; it must be a postgres serving DATA.
pid=$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null || true)
if pid_runs_with "$pid" "$DATA"; then
  if [ -x "$PG_BIN/pg_ctl" ]; then
    if [ "$(id -u)" = 0 ]; then
      runuser -u postgres -- "$PG_BIN/pg_ctl" stop -D "$DATA" -m "$mode" -w -t 30 >/dev/null 2>&1
    else
      "$PG_BIN/pg_ctl" stop -D "$DATA" -m "$mode" -w -t 30 >/dev/null 2>&1
    fi
  fi
  # pg_ctl missing or timed out: SIGQUIT is the postmaster's immediate shutdown.
  if alive_pid "$pid"; then
    kill -QUIT "$pid" 2>/dev/null
    for _ in $(seq 100); do alive_pid "$pid" || break; sleep 0.05; done
    alive_pid "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
fi
[ "$keep" = 1 ] && exit 0
rm -rf "$DATA" "$DIR/pg.env" "$DIR/postgres.log" "$DIR/initdb.log" "$DIR"/.pw.* "$DIR"/.s.PGSQL.*
# DIR itself goes only if nothing else is in it (so a mistaken `pg-down.sh ~` cannot wipe a home directory).
rmdir "$DIR" 2>/dev/null || log "$DIR not removed: it holds files pg-up.sh did not create"
exit 0
