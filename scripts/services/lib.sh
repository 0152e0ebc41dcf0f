# shellcheck shell=bash
# Shared by the service scripts in this folder (sourced, not run). Each script sets SCRIPT before sourcing.

# runuser lives in sbin, which a caller's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin

log() { echo "$SCRIPT: $*" >&2; }

# A process that runs and is not a zombie (a daemon whose parent exited is reaped by init, maybe late).
alive_pid() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# True when PID runs and its command line contains TEXT: a pid file alone may name a reused pid.
pid_runs_with() { # PID TEXT
  [ -n "$1" ] && alive_pid "$1" && { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -- "$2"
}

# TERM, wait up to 10 s, then KILL. Returns once the process is gone.
stop_pid() { # PID NAME
  local pid=$1 name=$2 _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 200); do alive_pid "$pid" || return 0; sleep 0.05; done
  log "$name (pid $pid) ignored SIGTERM for 10 s, sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 100); do alive_pid "$pid" || return 0; sleep 0.05; done
}

# Something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port in 20000-31999 (below Linux's ephemeral range, so no outgoing connection holds it) with nothing
# listening on it, nor on the COUNT-1 ports after it. Another process may still take it before we bind:
# callers that chose the port themselves retry on a bind failure.
pick_free_ports() { # [COUNT]
  local count=${1:-1} base i _
  for _ in $(seq 100); do
    base=$((20000 + RANDOM % (12000 - count)))
    for ((i = 0; i < count; i++)); do port_in_use $((base + i)) && continue 2; done
    echo "$base"
    return 0
  done
  log "no free port found in 20000-31999"
  return 1
}

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# apt-get install PACKAGES unless EDGE_SERVICES_INSTALL=0 (the test helper sets it: tests never install).
install_packages() {
  if [ "${EDGE_SERVICES_INSTALL:-1}" = 0 ]; then
    log "not installed: $* (apt-get install $*)"
    return 1
  fi
  local sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  log "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "$@" >&2
}

# DIR made absolute, without whitespace (it ends up in configuration files and URLs).
absolute_dir() {
  case "$1" in *[[:space:]]*) log "DIR must not contain whitespace: '$1'"; return 1 ;; esac
  mkdir -p "$1" && (cd "$1" && pwd)
}
