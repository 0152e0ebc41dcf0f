#!/usr/bin/env bash
# rgw-down.sh DIR [--gateway-only] - stop the cluster rgw-up.sh started in DIR and remove DIR.
#   --gateway-only  stop only radosgw (monitor and OSD keep the objects): `rgw-up.sh DIR` starts it again
# Idempotent: a missing DIR is fine. Only processes whose pid file is in DIR and whose command line names
# DIR/ceph.conf are signalled, one at a time (gateway, OSD, monitor), each waited for.
set -uo pipefail
SCRIPT=rgw-down
. "$(dirname "$0")/lib.sh"

DIR=${1:?usage: rgw-down.sh DIR [--gateway-only]}
daemons=(client.rgw.a osd.0 mon.a)
case "${2:-}" in
  "") ;;
  --gateway-only) daemons=(client.rgw.a) ;;
  *) echo "usage: rgw-down.sh DIR [--gateway-only]" >&2; exit 2 ;;
esac
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)

for d in "${daemons[@]}"; do
  pid=$(cat "$DIR/run/$d.pid" 2>/dev/null) || continue
  if pid_runs_with "$pid" "$DIR/ceph.conf"; then stop_pid "$pid" "$d"; fi
done
[ ${#daemons[@]} = 1 ] && exit 0
rm -rf "${DIR:?}"/{mon,osd,rgw,run,log,ceph.conf,monmap,s3.env}
# DIR itself goes only if nothing else is in it (so a mistaken `rgw-down.sh ~` cannot wipe a home directory).
rmdir "$DIR" 2>/dev/null || log "$DIR not removed: it holds files rgw-up.sh did not create"
exit 0
