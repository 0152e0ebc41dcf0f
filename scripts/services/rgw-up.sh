#!/usr/bin/env bash
# rgw-up.sh DIR [PORT] - a throwaway one-node Ceph cluster serving S3 (monitor, one OSD on memstore, radosgw),
# kept in DIR, without systemd, everything on 127.0.0.1. Data lives in RAM and is lost when the OSD stops.
#
# Creates one S3 user with a random key pair, and nothing else (no bucket). On success prints one line on stdout,
# also written to DIR/s3.env:
#   EDGE_TEST_S3_ENDPOINT=http://127.0.0.1:PORT EDGE_TEST_S3_ACCESS_KEY_ID=... EDGE_TEST_S3_SECRET_ACCESS_KEY=...
# If the monitor and OSD of DIR still run but the gateway was stopped (`rgw-down.sh DIR --gateway-only`), starts
# only the gateway again: the objects are still there.
# On failure: exit 1, log tails on stderr, daemons stopped, DIR kept (rgw-down.sh DIR removes it).
#
# env: RGW_MON_PORT, RGW_OSD_PORT_MIN (10 ports from there; default: free ports), MEMSTORE_BYTES (capacity,
#      default 2 GiB, allocated as used), RGW_READY_TIMEOUT (seconds, default 120), EDGE_SERVICES_INSTALL=0 to
#      never apt-get install, RGW_EXTRA_CONF (lines appended to DIR/ceph.conf, may contain [section] lines).
set -euo pipefail
SCRIPT=rgw-up
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: rgw-up.sh DIR [PORT]" >&2; exit 2; }
PORT=${2:-}
MEMSTORE_BYTES=${MEMSTORE_BYTES:-2147483648}
READY_TIMEOUT=${RGW_READY_TIMEOUT:-120}
DAEMONS=(client.rgw.a osd.0 mon.a) # in stop order

# ---- packages ---------------------------------------------------------------------------------------------
missing=()
for tool in ceph-mon:ceph-mon ceph-osd:ceph-osd radosgw:radosgw radosgw-admin:radosgw ceph:ceph-common \
  monmaptool:ceph-common curl:curl; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)
  install_packages "${packages[@]}" || exit 1
fi

DIR=$(absolute_dir "$1") || exit 1
CONF=$DIR/ceph.conf

daemon_pid() { cat "$DIR/run/$1.pid" 2>/dev/null; }
daemon_runs() { pid_runs_with "$(daemon_pid "$1")" "$CONF"; }
stop_daemons() { # rgw, then osd, then mon, each waited for: stopped all at once they wait ~10 s for each other
  local d
  for d in "${DAEMONS[@]}"; do
    if daemon_runs "$d"; then stop_pid "$(daemon_pid "$d")" "$d"; fi
  done
}
die() { # the logs' tails, then the reason last, where a reader of the end of stderr sees it
  local f
  for f in "$DIR"/log/*.log "$DIR"/log/*.out; do
    [ -s "$f" ] && { echo "--- tail $f" >&2; tail -n 15 "$f" | cut -c1-300 >&2; }
  done
  [ "${restart_only:-0}" = 1 ] || stop_daemons
  log "ERROR: $* (logs left in $DIR/log; rgw-down.sh $DIR removes them)"
  exit 1
}
# Daemons run in the foreground (-f) in their own session, detached from our output (whoever reads our stdout
# sees it close when we exit); we write their pid files ourselves.
start_daemon() { # NAME COMMAND...
  local name=$1
  shift
  setsid "$@" -f </dev/null >"$DIR/log/$name.out" 2>&1 &
  echo $! >"$DIR/run/$name.pid"
}
check_alive() {
  local d
  for d in "${DAEMONS[@]}"; do
    [ -f "$DIR/run/$d.pid" ] || continue
    daemon_runs "$d" || die "$d (pid $(daemon_pid "$d")) exited"
  done
}
# Ready: anonymous GET / answers an S3 bucket list and (where ss exists) our radosgw owns the listening socket,
# so another server that took the port cannot pass for it.
gateway_ready() {
  local body
  body=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/" 2>/dev/null) || return 1
  case "$body" in *ListAllMyBucketsResult*) ;; *) return 1 ;; esac
  if command -v ss >/dev/null; then
    ss -ltnpH "sport = :$PORT" 2>/dev/null | grep -q "pid=$(daemon_pid client.rgw.a)," || return 1
  fi
}
start_gateway() {
  start_daemon client.rgw.a radosgw -c "$CONF" -n client.rgw.a
  local deadline=$((SECONDS + READY_TIMEOUT))
  until gateway_ready; do
    check_alive
    [ $SECONDS -lt $deadline ] || die "gateway not answering on 127.0.0.1:$PORT after ${READY_TIMEOUT}s"
    sleep 0.1
  done
}

# ---- a stopped gateway of a running cluster: start it again ----------------------------------------------
if daemon_runs client.rgw.a; then
  log "$DIR already runs a gateway; rgw-down.sh $DIR first"
  exit 1
fi
if daemon_runs mon.a && daemon_runs osd.0 && [ -f "$DIR/s3.env" ]; then
  restart_only=1
  PORT=$(sed -n 's|.*beast endpoint=127\.0\.0\.1:\([0-9]*\).*|\1|p' "$CONF")
  port_in_use "$PORT" && die "port $PORT on 127.0.0.1 is in use"
  start_gateway
  cat "$DIR/s3.env"
  exit 0
fi
if daemon_runs mon.a || daemon_runs osd.0; then
  log "$DIR runs part of a cluster; rgw-down.sh $DIR first"
  exit 1
fi

# ---- a new cluster ----------------------------------------------------------------------------------------
rm -rf "${DIR:?}"/{mon,osd,rgw,run,log,ceph.conf,monmap,s3.env}
mkdir -p "$DIR"/{mon/a,osd/0,rgw,run,log}
chmod 0700 "$DIR"

if [ -z "$PORT" ]; then PORT=$(pick_free_ports) || exit 1; fi
MON_PORT=${RGW_MON_PORT:-$(pick_free_ports)} || exit 1
OSD_PORT_MIN=${RGW_OSD_PORT_MIN:-$(pick_free_ports 10)} || exit 1
for p in "$PORT" "$MON_PORT"; do
  port_in_use "$p" && die "port $p on 127.0.0.1 is in use"
done
AK=$(random_hex 10 | tr a-f A-F)
SK=$(random_hex 20)

FSID=$(cat /proc/sys/kernel/random/uuid)
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
cat >"$CONF" <<CONF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT]
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind msgr2 = true
ms bind ipv6 = false
ms bind port min = $OSD_PORT_MIN
ms bind port max = $((OSD_PORT_MIN + 9))
# No cephx inside this loopback-only throwaway cluster; S3 requests are still signed and checked by radosgw.
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
# radosgw and radosgw-admin ask the monitor for a "secure" connection by default, which auth none cannot give:
# without crc they wait 300 s ("get_initial_auth_request returned -13").
ms mon client mode = crc secure
client mount timeout = 60
run dir = $DIR/run
# No admin sockets: nothing here uses them, and their path is limited to 107 bytes (DIR may be long).
admin socket =
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = true
mon cluster log file = $DIR/log/cluster.log
crash dir = $DIR/log/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 1
mon data avail crit = 0
# must be ordered nearfull < backfillfull < full, or the cluster reports HEALTH_ERR
mon osd nearfull ratio = .97
mon osd backfillfull ratio = .98
mon osd full ratio = .99
osd failsafe full ratio = .995
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd memory target = 268435456
osd op num shards = 1
osd op num threads per shard = 2
debug ms = 0/0

[mon]
mon data = $DIR/mon/\$id
# Each change to the OSD map otherwise waits a second, and radosgw makes about ten at its first start.
paxos propose interval = 0.01
paxos min wait = 0.01
mon osd auto mark in = true

[osd]
osd data = $DIR/osd/\$id
osd crush update on start = true

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $DIR/rgw
rgw thread pool size = 32
rgw enable usage log = false
rgw enable ops log = false
# Deleted objects' data is freed after about a minute instead of two hours (memstore holds it in RAM).
rgw gc obj min wait = 60
rgw gc processor period = 60
CONF
if [ -n "${RGW_EXTRA_CONF:-}" ]; then printf '%s\n' "$RGW_EXTRA_CONF" >>"$CONF"; fi

# ---- monitor ----------------------------------------------------------------------------------------------
monmaptool --create --clobber --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" -i a --mkfs --monmap "$DIR/monmap" >"$DIR/log/mkfs-mon.out" 2>&1 || die "monitor mkfs failed"
start_daemon mon.a ceph-mon -c "$CONF" -i a

# ---- OSD --------------------------------------------------------------------------------------------------
osd_id=$(ceph -c "$CONF" --connect-timeout 30 osd new "$OSD_UUID" 2>"$DIR/log/osd-new.out") || die "'ceph osd new' failed"
[ "$osd_id" = 0 ] || die "unexpected OSD id '$osd_id'"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/mkfs-osd.out" 2>&1 || die "OSD mkfs failed"
start_daemon osd.0 ceph-osd -c "$CONF" -i 0
# radosgw creates its pools at its first start; placement groups of a pool made before the OSD is active are
# only created on a later monitor tick (4-5 s more), so wait for the OSD first.
deadline=$((SECONDS + 60))
until grep -q 'state: booting -> active' "$DIR/log/osd.0.log" 2>/dev/null; do
  check_alive
  [ $SECONDS -lt $deadline ] || die "osd.0 not active after 60 s"
  sleep 0.1
done

# ---- gateway and its user ---------------------------------------------------------------------------------
start_gateway
radosgw-admin -c "$CONF" user create --uid=edge-test --display-name="edge test" \
  --access-key="$AK" --secret="$SK" >"$DIR/log/user-create.out" 2>&1 || die "radosgw-admin user create failed"
check_alive

line="EDGE_TEST_S3_ENDPOINT=http://127.0.0.1:$PORT EDGE_TEST_S3_ACCESS_KEY_ID=$AK EDGE_TEST_S3_SECRET_ACCESS_KEY=$SK"
(umask 077 && echo "$line" >"$DIR/s3.env")
echo "$line"
