#!/usr/bin/env bash
# A Docker engine for icebench: the caller's engine when one answers, else a private dockerd.
#
#   compose/docker-engine.sh start    # prints DOCKER_HOST=unix://... (last line of stdout)
#   compose/docker-engine.sh stop     # stops the private dockerd (never a system engine); idempotent
#   compose/docker-engine.sh status   # exit 0 when an engine answers
#   compose/docker-engine.sh env      # prints: export DOCKER_HOST=unix://...
#
# The private engine lives entirely under ${ICEBENCH_DOCKER_DIR:-/var/tmp/icebench-docker}:
# socket docker.sock, data root data/, exec root exec/ (its managed containerd too), pidfile
# dockerd.pid, log dockerd.log, an empty daemon.json (the system /etc/docker/daemon.json is not
# read). No TCP listener. When missing, docker.io docker-compose debootstrap are installed with
# apt-get (root only).
# Env: ICEBENCH_DOCKER_DIR, ICEBENCH_DOCKERD_OPTS (extra dockerd flags, e.g. --iptables=false),
#      ICEBENCH_ENGINE_OWNER (recorded by start; `stop --if-owner NAME` stops only when it matches).
set -euo pipefail

DIR="${ICEBENCH_DOCKER_DIR:-/var/tmp/icebench-docker}"
SOCK="$DIR/docker.sock"
PIDFILE="$DIR/dockerd.pid"
LOG="$DIR/dockerd.log"
OWNER_FILE="$DIR/owner"
PRIVATE_HOST="unix://$SOCK"
PACKAGES=(docker.io docker-compose debootstrap)

die() { echo "docker-engine.sh: $*" >&2; exit 1; }
say() { echo "docker-engine.sh: $*" >&2; }

# PID of our dockerd when it runs (checked against its command line), else nothing.
private_pid() {
  [[ -f $PIDFILE ]] || return 0
  local pid
  pid=$(tr -dc 0-9 < "$PIDFILE")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 0
  if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "--pidfile $PIDFILE"; then echo "$pid"; fi
}

answers() { # DOCKER_HOST value ("" = the CLI's default)
  command -v docker >/dev/null || return 1
  if [[ -n $1 ]]; then DOCKER_HOST=$1 timeout 10 docker info >/dev/null 2>&1
  else (unset DOCKER_HOST; timeout 10 docker info >/dev/null 2>&1); fi
}

# An engine that is not ours and answers: the caller's DOCKER_HOST, else the CLI default.
system_host() {
  local h="${DOCKER_HOST:-}"
  [[ $h == "$PRIVATE_HOST" ]] && return 0
  if answers "$h"; then echo "${h:-unix:///var/run/docker.sock}"; fi
}

ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  ((${#missing[@]})) || return 0
  [[ $(id -u) == 0 ]] || die "missing ${missing[*]} (run as root: apt-get install -y ${PACKAGES[*]})"
  say "installing ${PACKAGES[*]}"
  local t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${PACKAGES[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null && apt-get install -y -qq "${PACKAGES[@]}" >/dev/null; } \
    || die "apt-get install ${PACKAGES[*]} failed"
  say "installed ${PACKAGES[*]} in $((SECONDS - t0))s"
}

start() {
  local sys
  sys=$(system_host)
  if [[ -n $sys ]]; then
    say "using the engine already answering at $sys (not managed here)"
    echo "DOCKER_HOST=$sys"
    return
  fi
  if [[ -n $(private_pid) ]] && answers "$PRIVATE_HOST"; then
    say "private dockerd already running (pid $(private_pid))"
    echo "DOCKER_HOST=$PRIVATE_HOST"
    return
  fi
  ensure_packages
  [[ $(id -u) == 0 ]] || die "no Docker engine answers and a private dockerd needs root"
  if [[ -n $(private_pid) ]]; then
    say "private dockerd pid $(private_pid) does not answer: restarting it"
    stop_private
  fi
  mkdir -p "$DIR/data" "$DIR/exec"
  [[ -f $DIR/daemon.json ]] || echo '{}' > "$DIR/daemon.json"
  rm -f "$SOCK"
  local t0=$SECONDS
  # shellcheck disable=SC2086  # ICEBENCH_DOCKERD_OPTS is a list of flags
  setsid dockerd -H "$PRIVATE_HOST" --data-root "$DIR/data" --exec-root "$DIR/exec" \
    --pidfile "$PIDFILE" --config-file "$DIR/daemon.json" --iptables=true \
    ${ICEBENCH_DOCKERD_OPTS:-} > "$LOG" 2>&1 < /dev/null &
  local launched=$!
  for _ in $(seq 1 120); do
    if answers "$PRIVATE_HOST"; then
      echo "${ICEBENCH_ENGINE_OWNER:-manual}" > "$OWNER_FILE"
      say "private dockerd started (pid $(private_pid)) in $((SECONDS - t0))s; log $LOG"
      echo "DOCKER_HOST=$PRIVATE_HOST"
      return
    fi
    kill -0 "$launched" 2>/dev/null || die "dockerd exited at start: $(tail -n 1 "$LOG")"
    sleep 0.5
  done
  die "dockerd did not answer on $SOCK within 60s (log: $LOG)"
}

stop_private() {
  local pid children
  pid=$(private_pid)
  if [[ -z $pid ]]; then
    rm -f "$PIDFILE" "$OWNER_FILE"
    return 1
  fi
  children=$(ps -o pid= --ppid "$pid" -o comm= | awk '$2 == "containerd" {print $1}')
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "dockerd pid $pid ignored SIGTERM for 30s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  for c in $children; do
    kill -0 "$c" 2>/dev/null && kill -KILL "$c" 2>/dev/null || true
  done
  # Mounts an unclean exit can leave under our own directory only.
  awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  rm -f "$PIDFILE" "$OWNER_FILE" "$SOCK"
  say "private dockerd (pid $pid) stopped"
}

stop() {
  if [[ ${1:-} == --if-owner ]]; then
    local want=${2:?--if-owner needs a name} have
    have=$(cat "$OWNER_FILE" 2>/dev/null || true)
    if [[ -n $(private_pid) && $have != "$want" ]]; then
      say "private dockerd was started by '${have:-unknown}', not '$want': left running"
      return
    fi
  fi
  if ! stop_private; then
    say "no private dockerd running (a system engine, if any, is left alone)"
  fi
}

status() {
  local sys
  sys=$(system_host)
  if [[ -n $sys ]]; then echo "system engine answering at $sys"; return; fi
  if [[ -n $(private_pid) ]] && answers "$PRIVATE_HOST"; then
    echo "private dockerd running: pid $(private_pid), DOCKER_HOST=$PRIVATE_HOST, owner $(cat "$OWNER_FILE" 2>/dev/null || echo unknown)"
    return
  fi
  echo "no Docker engine answers (start one: compose/docker-engine.sh start)"
  return 1
}

env_line() {
  local sys
  sys=$(system_host)
  if [[ -n $sys ]]; then echo "export DOCKER_HOST=$sys"; return; fi
  if [[ -n $(private_pid) ]] && answers "$PRIVATE_HOST"; then echo "export DOCKER_HOST=$PRIVATE_HOST"; return; fi
  die "no Docker engine answers (start one: compose/docker-engine.sh start)"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  status) status ;;
  env) env_line ;;
  *) die "usage: docker-engine.sh start|stop [--if-owner NAME]|status|env" ;;
esac
