#!/usr/bin/env bash
# Build icebench's local images without any container registry (idempotent, cached).
#
#   compose/images.sh [all|base|base-java|wheelhouse|worker|s3|rest|worker-upstream] ...
#
#   icebench/base:bookworm       debootstrap minbase bookworm: python3 (3.11), python3-venv, ca-certificates
#   icebench/base-java:bookworm  the same + openjdk-17-jre-headless, sqlite-jdbc, slf4j (REST catalog)
#   compose/worker/wheelhouse/   pip wheel -r requirements.lock (gitignored)
#   icebench/worker:local        compose/worker/Dockerfile on icebench/base-java:bookworm (Spark too)
#   icebench/s3:local            SeaweedFS's S3 gateway on :9000 (compose/s3/Dockerfile, FROM the worker image)
#   icebench/rest:local          compose/rest-catalog's server on :8181 (compose/rest/Dockerfile)
#   icebench/worker:upstream     (only when asked) compose/worker/Dockerfile on python:3.11-slim
#
# Needs a Docker engine (DOCKER_HOST; compose/docker-engine.sh start) and root for debootstrap.
# Rootfs tarballs and debootstrap's .debs are cached under ${ICEBENCH_CACHE:-~/.cache/icebench},
# so re-importing a base after a data-root wipe takes seconds. An image that exists is skipped
# unless FORCE=1; an image whose inputs changed is rebuilt (see have_image) and its old copy
# removed. Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), PYTHON (pip for the
# wheelhouse; default: repo .venv/bin/python, else python3).
set -euo pipefail
export DOCKER_BUILDKIT=0 # the classic builder: no buildx plugin on Debian 12
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
CACHE="${ICEBENCH_CACHE:-$HOME/.cache/icebench}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
FORCE="${FORCE:-0}"

BASE_IMAGE=icebench/base:bookworm
JAVA_IMAGE=icebench/base-java:bookworm
WORKER_IMAGE=icebench/worker:local
S3_IMAGE=icebench/s3:local
REST_IMAGE=icebench/rest:local
UPSTREAM_WORKER_IMAGE=icebench/worker:upstream
BASE_PACKAGES=python3,python3-venv,ca-certificates
JAVA_PACKAGES=openjdk-17-jre-headless,libxerial-sqlite-jdbc-java,libslf4j-java
WHEELHOUSE="$HERE/worker/wheelhouse"

die() { echo "images.sh: $*" >&2; exit 1; }
say() { echo "images.sh: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

command -v docker >/dev/null || die "missing docker CLI (compose/docker-engine.sh start installs docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers at ${DOCKER_HOST:-the default socket} (eval \"\$(compose/docker-engine.sh env)\")"

# An image is current when it exists and its label icebench.key matches the hash of its inputs
# (parent image ID, Dockerfile, files copied in), so a changed input rebuilds it even without FORCE=1.
have_image() { # IMAGE KEY
  [[ $FORCE != 1 ]] || return 1
  [[ $(docker image inspect -f '{{index .Config.Labels "icebench.key"}}' "$1" 2>/dev/null) == "$2" ]]
}
# Drop the copy an image replaced (only that ID, only when no tag or container still uses it).
drop_old() { # OLD_ID IMAGE
  [[ -n $1 && $1 != "$(docker image inspect -f '{{.Id}}' "$2" 2>/dev/null)" ]] || return 0
  docker rmi "$1" >/dev/null 2>&1 || true
}
old_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
# Each step runs once per invocation (all -> worker, s3 -> worker, ...).
once() { local v="DONE_${1//-/_}"; [[ -z ${!v:-} ]] || return 1; printf -v "$v" 1; }
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || die "image $1 missing"; }
key_of() { # files and strings -> short hash
  local x
  for x in "$@"; do if [[ -f $x ]]; then sha256sum < "$x"; else echo "$x"; fi; done | sha256sum | cut -c1-16
}
# The classic builder's deprecation notice is noise here.
quiet_build() { docker build -q "$@" 2> >(grep -vE 'DEPRECATED: The legacy builder|BuildKit is currently disabled|environment-variable\.|^$' >&2) >/dev/null; }

# ---------------------------------------------------------------- base images (debootstrap)
# build_rootfs NAME PACKAGES -> cached tarball path on stdout. The tarball name carries a hash of
# what went into it, so changing the package list rebuilds it.
rootfs_key() { printf '%s\n' "$SUITE" "$MIRROR" "$1" "v1" | sha256sum | cut -c1-12; }
build_rootfs() {
  local name=$1 packages=$2 key tar tmp t0
  key=$(rootfs_key "$packages")
  tar="$CACHE/rootfs/$name-$SUITE-$key.tar"
  if [[ -f $tar && $FORCE != 1 ]]; then echo "$tar"; return; fi
  command -v debootstrap >/dev/null || die "missing debootstrap (apt-get install -y debootstrap)"
  [[ $(id -u) == 0 ]] || die "debootstrap needs root"
  mkdir -p "$CACHE/rootfs" "$CACHE/debootstrap-debs"
  tmp=$(mktemp -d "$CACHE/rootfs/.build-XXXXXX")
  # shellcheck disable=SC2064
  trap "umount -R '$tmp/root/proc' 2>/dev/null || true; rm -rf '$tmp'" EXIT
  t0=$(now)
  say "debootstrap $SUITE ($packages) ..."
  debootstrap --variant=minbase --include="$packages" --cache-dir="$CACHE/debootstrap-debs" \
    "$SUITE" "$tmp/root" "$MIRROR" > "$tmp/debootstrap.log" 2>&1 \
    || die "debootstrap failed: $(grep -E '^E:|W: Failure' "$tmp/debootstrap.log" | head -n 1) (log: $tmp/debootstrap.log)"
  say "debootstrap $name: $(since "$t0")"
  # Trim what a container never needs; keep apt working (sources.list, keyrings).
  chroot "$tmp/root" apt-get clean
  rm -rf "$tmp/root"/var/lib/apt/lists/* "$tmp/root"/usr/share/doc/* "$tmp/root"/usr/share/man/* \
    "$tmp/root"/usr/share/info/* "$tmp/root"/var/log/*.log "$tmp/root"/var/cache/debconf/*-old
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
    "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" "$SUITE" > "$tmp/root/etc/apt/sources.list"
  tar --numeric-owner -C "$tmp/root" -cf "$tar.part" . && mv "$tar.part" "$tar"
  rm -rf "$tmp"
  trap - EXIT
  say "rootfs $tar ($(du -h "$tar" | cut -f1)) in $(since "$t0")"
  echo "$tar"
}

import_base() { # IMAGE NAME PACKAGES
  local image=$1 tar t0 key
  key=$(rootfs_key "$3")
  if have_image "$image" "$key"; then say "$image: up to date"; return; fi
  tar=$(build_rootfs "$2" "$3")
  local old
  old=$(old_id "$image")
  t0=$(now)
  docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
    --change "LABEL icebench.key=$key" "$tar" "$image" >/dev/null \
    || die "docker import $tar failed"
  drop_old "$old" "$image"
  say "$image: imported in $(since "$t0")"
}

base() { once base || return 0; import_base "$BASE_IMAGE" base "$BASE_PACKAGES"; }
base_java() { once base-java || return 0; import_base "$JAVA_IMAGE" base-java "$BASE_PACKAGES,$JAVA_PACKAGES"; }

# ---------------------------------------------------------------- wheelhouse
wheelhouse() {
  once wheelhouse || return 0
  local py key t0
  key=$(sha256sum "$ROOT/requirements.lock" | cut -d' ' -f1)
  if [[ $FORCE != 1 && -f $WHEELHOUSE/.stamp && $(cat "$WHEELHOUSE/.stamp") == "$key" \
        && $(cat "$HERE/worker/requirements.lock" 2>/dev/null) == $(cat "$ROOT/requirements.lock") ]]; then
    say "wheelhouse: up to date ($(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels)"
    return
  fi
  py="${PYTHON:-}"
  if [[ -z $py ]]; then
    if [[ -x $ROOT/.venv/bin/python ]]; then py=$ROOT/.venv/bin/python; else py=python3; fi
  fi
  "$py" -m pip --version >/dev/null 2>&1 || die "no pip for $py (make install, or set PYTHON=)"
  t0=$(now)
  rm -rf "$WHEELHOUSE"
  mkdir -p "$WHEELHOUSE"
  # (grep: a pip.conf naming absent local indexes makes pip warn once per package)
  "$py" -m pip wheel --quiet --disable-pip-version-check -r "$ROOT/requirements.lock" -w "$WHEELHOUSE" \
    2> >(grep -v '^WARNING: Location .* is ignored' >&2) \
    || die "pip wheel -r requirements.lock failed (PyPI unreachable?)"
  cp "$ROOT/requirements.lock" "$HERE/worker/requirements.lock"
  echo "$key" > "$WHEELHOUSE/.stamp"
  say "wheelhouse: $(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1), in $(since "$t0")"
}

# ---------------------------------------------------------------- images from Dockerfiles
build() { # IMAGE KEY CONTEXT [docker build args...]
  local image=$1 key=$2 context=$3 t0
  shift 3
  if have_image "$image" "$key"; then say "$image: up to date"; return; fi
  local old
  old=$(old_id "$image")
  t0=$(now)
  quiet_build -t "$image" --label "icebench.key=$key" "$@" "$context" || die "docker build $image failed"
  drop_old "$old" "$image"
  say "$image: built in $(since "$t0")"
}

worker() { # on the Java base: Spark writers run in the container too
  once worker || return 0
  base_java
  wheelhouse
  build "$WORKER_IMAGE" "$(key_of "$(image_id "$JAVA_IMAGE")" "$HERE/worker/Dockerfile" "$ROOT/requirements.lock")" \
    "$HERE/worker" --build-arg "BASE_IMAGE=$JAVA_IMAGE"
}

worker_upstream() { # needs python:3.11-slim, i.e. a registry (or a pre-loaded image)
  wheelhouse
  build "$UPSTREAM_WORKER_IMAGE" "$(key_of python:3.11-slim "$HERE/worker/Dockerfile" "$ROOT/requirements.lock")" \
    "$HERE/worker"
}

s3() {
  worker
  build "$S3_IMAGE" "$(key_of "$(image_id "$WORKER_IMAGE")" "$HERE/s3/Dockerfile")" \
    "$HERE/s3" --build-arg "WORKER_IMAGE=$WORKER_IMAGE"
}

rest() {
  base_java
  local jars="$HERE/rest-catalog/build"
  if [[ ! -f $jars/rest-catalog.jar || ! -f $jars/.stamp ]]; then
    say "building the REST catalog server (compose/rest-catalog/build.sh)"
    "$HERE/rest-catalog/build.sh" >&2 || die "compose/rest-catalog/build.sh failed"
  fi
  local t0 key
  key=$(key_of "$(image_id "$JAVA_IMAGE")" "$HERE/rest/Dockerfile" "$HERE/rest/entrypoint.sh" "$jars/.stamp")
  if have_image "$REST_IMAGE" "$key"; then say "$REST_IMAGE: up to date"; return; fi
  local old
  old=$(old_id "$REST_IMAGE")
  t0=$(now)
  # Context as a tar stream: this folder's Dockerfile + entrypoint and the server's jars.
  tar -c -C "$HERE/rest" Dockerfile entrypoint.sh -C "$jars" rest-catalog.jar lib \
    | quiet_build -t "$REST_IMAGE" --label "icebench.key=$key" --build-arg "BASE_IMAGE=$JAVA_IMAGE" - \
    || die "docker build $REST_IMAGE failed"
  drop_old "$old" "$REST_IMAGE"
  say "$REST_IMAGE: built in $(since "$t0")"
}

all() { worker; s3; rest; }

(($#)) || set -- all
for target in "$@"; do
  case $target in
    all) all ;;
    base) base ;;
    base-java) base_java ;;
    wheelhouse) wheelhouse ;;
    worker) worker ;;
    worker-upstream) worker_upstream ;;
    s3) s3 ;;
    rest) rest ;;
    *) die "unknown target '$target' (all|base|base-java|wheelhouse|worker|s3|rest|worker-upstream)" ;;
  esac
done
