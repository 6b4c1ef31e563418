#!/usr/bin/env bash
# The icebench compose stack (S3 + bucket + Iceberg REST catalog), engine and images included.
#
#   compose/stack.sh up      # engine, images (local variant), compose up -d, wait until healthy
#   compose/stack.sh down    # compose down -v; stops the private engine only if `up` started it
#   compose/stack.sh ps      # compose ps
#
# Env: COMPOSE_VARIANT=local|upstream|auto (default local: images built here by images.sh;
#      upstream: the pinned registry images; auto: upstream when its images are present or can
#      be pulled, else local), COMPOSE_PROJECT_NAME (default icebench), S3_PORT (9000),
#      REST_PORT (8181), AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (dev defaults admin/password),
#      UP_TIMEOUT (seconds to wait for health, default 180), ICEBENCH_ENGINE_OWNER (default
#      compose-stack: the name a private engine started by `up` is recorded under; `down` stops
#      the private engine only when it was started under that same name).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FILE="$HERE/docker-compose.yml"
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-icebench}"
VARIANT="${COMPOSE_VARIANT:-local}"
OWNER="${ICEBENCH_ENGINE_OWNER:-compose-stack}"

die() { echo "stack.sh: $*" >&2; exit 1; }
say() { echo "stack.sh: $*" >&2; }

engine() {
  local line
  line=$(ICEBENCH_ENGINE_OWNER=$OWNER "$HERE/docker-engine.sh" start | tail -n 1)
  [[ $line == DOCKER_HOST=* ]] || die "docker-engine.sh start gave no DOCKER_HOST"
  export DOCKER_HOST="${line#DOCKER_HOST=}"
  command -v docker-compose >/dev/null || die "missing docker-compose (apt-get install -y docker-compose)"
}

compose() { # compose ARGS... with the variant's env file
  local args=(-f "$FILE")
  [[ $VARIANT == local ]] && args=(--env-file "$HERE/local.env" "${args[@]}")
  docker-compose "${args[@]}" "$@"
}

upstream_images() { # the pinned images named in docker-compose.yml (env defaults)
  docker-compose -f "$FILE" config | awk '$1 == "image:" {print $2}' | grep -v '^icebench/' | sort -u
}

choose_variant() {
  case $VARIANT in
    local | upstream) ;;
    auto)
      VARIANT=upstream
      local image
      for image in $(upstream_images); do
        docker image inspect "$image" >/dev/null 2>&1 && continue
        if ! timeout 60 docker pull -q "$image" >/dev/null 2>&1; then
          say "cannot pull $image: using the local variant"
          VARIANT=local
          break
        fi
      done
      ;;
    *) die "COMPOSE_VARIANT must be local, upstream or auto (got '$VARIANT')" ;;
  esac
}

health() { # container -> health status (or state when it has no healthcheck)
  docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null \
    || echo missing
}

wait_healthy() {
  local deadline=$((SECONDS + ${UP_TIMEOUT:-180})) s3 rest bucket
  while :; do
    s3=$(health "$(compose ps -q minio)")
    rest=$(health "$(compose ps -q rest)")
    bucket=$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$(compose ps -q createbucket)" 2>/dev/null || echo missing)
    [[ $bucket == "exited "[1-9]* ]] && die "createbucket failed: $(compose logs --no-color --tail 3 createbucket | tail -n 1)"
    if [[ $s3 == healthy && $rest == healthy && $bucket == "exited 0" ]]; then return; fi
    if ((SECONDS > deadline)); then
      die "not healthy after ${UP_TIMEOUT:-180}s: minio=$s3 createbucket=$bucket rest=$rest (compose logs: $0 logs)"
    fi
    sleep 1
  done
}

up() {
  local t0=$SECONDS
  engine
  choose_variant
  if [[ $VARIANT == local ]]; then
    "$HERE/images.sh" s3 rest
  else
    local image
    for image in $(upstream_images); do
      docker image inspect "$image" >/dev/null 2>&1 || docker pull -q "$image" >/dev/null \
        || die "cannot pull $image (no registry? use COMPOSE_VARIANT=local)"
    done
  fi
  local t1=$SECONDS
  compose up -d --remove-orphans
  wait_healthy
  say "$VARIANT stack healthy in $((SECONDS - t1))s after compose up ($((SECONDS - t0))s in all)"
  say "S3 http://127.0.0.1:${S3_PORT:-9000} (bucket ${S3_BUCKET:-warehouse}), REST catalog http://127.0.0.1:${REST_PORT:-8181}"
  echo "DOCKER_HOST=$DOCKER_HOST"
}

down() {
  if eval "$("$HERE/docker-engine.sh" env 2>/dev/null)" 2>/dev/null && [[ -n ${DOCKER_HOST:-} ]]; then
    [[ $VARIANT == auto ]] && VARIANT=local
    compose down -v --remove-orphans
  else
    say "no Docker engine answers: nothing to take down"
  fi
  "$HERE/docker-engine.sh" stop --if-owner "$OWNER"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  ps | logs)
    eval "$("$HERE/docker-engine.sh" env)"
    [[ $VARIANT == auto ]] && VARIANT=local
    compose "$@"
    ;;
  *) die "usage: stack.sh up|down|ps|logs [service]" ;;
esac
