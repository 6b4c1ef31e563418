#!/usr/bin/env bash
# Build the icebench Iceberg REST catalog server into ./build (idempotent, cached).
#   Inputs: Debian packages (jarjar, sqlite-jdbc, slf4j), two pinned PyPI wheels carrying
#   Iceberg 1.10.2 and Jackson 2.18.8 jars, and ./src. No Maven, no network besides apt/PyPI.
# Output: build/rest-catalog.jar + build/classpath.txt (absolute paths, ':'-joined).
# Env: PYTHON (interpreter with pip; default: repo .venv, else python3),
#      ICEBENCH_CACHE (default ~/.cache/icebench), FORCE=1 to rebuild.
set -euo pipefail
START_NS=$(date +%s%N)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
CACHE="${ICEBENCH_CACHE:-$HOME/.cache/icebench}/wheels"

ICEBERG_WHEEL=snowpark-connect-deps-iceberg==1.0.3
ICEBERG_WHEEL_FILE=snowpark_connect_deps_iceberg-1.0.3-py3-none-any.whl
ICEBERG_WHEEL_SHA=4f280e3677ab8d3a89f16647fc392ab2a3d48369f0c48873fe07bc1e74e06ffc
ICEBERG_JAR=snowpark_connect_deps_iceberg/jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar
JACKSON_WHEEL=snowpark-connect-deps-2==3.56.7
JACKSON_WHEEL_FILE=snowpark_connect_deps_2-3.56.7-py3-none-any.whl
JACKSON_WHEEL_SHA=567f48506b8dd6c78083210aa6e741ba057d5a9b8ce45d58b7a12250f5ba7a5d
JACKSON_VERSION=2.18.8
DEBS=(libjarjar-java libxerial-sqlite-jdbc-java libslf4j-java)

die() { echo "build.sh: $*" >&2; exit 1; }
done_msg() { local ms=$(( ($(date +%s%N) - START_NS) / 1000000 )); printf 'build.sh: %s (%d.%03ds)\n' "$1" $((ms / 1000)) $((ms % 1000)); }

# --- Debian packages (a JDK and unzip too, where missing) ----------------------------------
missing=()
for p in "${DEBS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v unzip >/dev/null || missing+=(unzip)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then
    echo "build.sh: installing ${missing[*]}"
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update -qq >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } \
      || die "apt-get install failed for: ${missing[*]}"
  else
    die "missing Debian packages (run as root: apt-get install -y --no-install-recommends ${missing[*]})"
  fi
fi
for t in java javac jar unzip sha256sum; do
  command -v "$t" >/dev/null || die "missing tool '$t' (JDK 17: apt-get install openjdk-17-jdk-headless)"
done
javac -version 2>&1 | grep -qE 'javac (1[7-9]|[2-9][0-9])' || die "need javac >= 17, got: $(javac -version 2>&1)"
JARJAR=/usr/share/java/jarjar.jar
SQLITE_JAR=/usr/share/java/sqlite-jdbc.jar
SLF4J_API=/usr/share/java/slf4j-api.jar
SLF4J_SIMPLE=/usr/share/java/slf4j-simple.jar
for f in "$JARJAR" "$SQLITE_JAR" "$SLF4J_API" "$SLF4J_SIMPLE"; do
  [[ -f $f ]] || die "missing $f (Debian package contents changed?)"
done

# --- pinned wheels -----------------------------------------------------------------------
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x $HERE/../../.venv/bin/python ]]; then PYTHON=$HERE/../../.venv/bin/python; else PYTHON=python3; fi
fi
fetch_wheel() { # spec file sha
  local f="$CACHE/$2"
  if [[ -f $f ]] && echo "$3  $f" | sha256sum -c --status; then return; fi
  mkdir -p "$CACHE"
  "$PYTHON" -m pip --version >/dev/null 2>&1 || die "no pip for $PYTHON (set PYTHON=/path/to/python-with-pip)"
  echo "build.sh: downloading $1"
  "$PYTHON" -m pip download --no-deps --only-binary=:all: -q -d "$CACHE" "$1" 2>&1 | grep -v '^WARNING' >&2 || true
  [[ -f $f ]] || die "pip download $1 failed (PyPI unreachable?)"
  echo "$3  $f" | sha256sum -c --status || die "sha256 mismatch for $f"
}
fetch_wheel "$ICEBERG_WHEEL" "$ICEBERG_WHEEL_FILE" "$ICEBERG_WHEEL_SHA"
fetch_wheel "$JACKSON_WHEEL" "$JACKSON_WHEEL_FILE" "$JACKSON_WHEEL_SHA"

# --- build (skipped when inputs are unchanged) -------------------------------------------
STAMP_INPUT=$( { cat "$0"; find "$HERE/src" -name '*.java' | sort | xargs cat; \
  sha256sum "$JARJAR" "$SQLITE_JAR" "$SLF4J_API" "$SLF4J_SIMPLE"; } | sha256sum | cut -d' ' -f1)
if [[ ${FORCE:-0} != 1 && -f $BUILD/.stamp && $(cat "$BUILD/.stamp") == "$STAMP_INPUT" \
      && -f $BUILD/rest-catalog.jar && -f $BUILD/classpath.txt ]]; then
  done_msg "up to date: $BUILD/rest-catalog.jar"
  exit 0
fi
rm -rf "$BUILD"
mkdir -p "$BUILD/lib" "$BUILD/tmp" "$BUILD/classes"
LIB="$BUILD/lib"
TMP="$BUILD/tmp"

unzip -q -o -j "$CACHE/$ICEBERG_WHEEL_FILE" "$ICEBERG_JAR" -d "$LIB" || die "jar $ICEBERG_JAR not in wheel"
ICEBERG_RUNTIME="$LIB/$(basename "$ICEBERG_JAR")"

# Iceberg's runtime jar references Jackson as org.apache.iceberg.shaded.com.fasterxml.jackson.*
# but this copy does not contain those classes: relocate plain Jackson jars the same way.
echo 'rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1' > "$TMP/jarjar.rules"
for m in core databind annotations; do
  src="snowpark_connect_deps_2/jars/jackson-$m-$JACKSON_VERSION.jar"
  unzip -q -o -j "$CACHE/$JACKSON_WHEEL_FILE" "$src" -d "$TMP" || die "$src not in wheel"
  # Drop multi-release entries (jarjar would map them onto the same class names).
  mkdir -p "$TMP/x-$m" && (cd "$TMP/x-$m" && unzip -q "$TMP/jackson-$m-$JACKSON_VERSION.jar" \
    && rm -rf META-INF/versions && jar --create --file "$TMP/plain-$m.jar" .)
  java -jar "$JARJAR" process "$TMP/jarjar.rules" "$TMP/plain-$m.jar" \
    "$LIB/iceberg-shaded-jackson-$m-$JACKSON_VERSION.jar" || die "jarjar failed on jackson-$m"
done

CP="$ICEBERG_RUNTIME"
for m in core databind annotations; do CP="$CP:$LIB/iceberg-shaded-jackson-$m-$JACKSON_VERSION.jar"; done
find "$HERE/src" -name '*.java' > "$TMP/sources.txt"
javac --release 17 -nowarn -encoding UTF-8 -cp "$CP" -d "$BUILD/classes" @"$TMP/sources.txt" \
  || die "javac failed"
jar --create --file "$BUILD/rest-catalog.jar" -C "$BUILD/classes" . || die "jar failed"
echo "$BUILD/rest-catalog.jar:$CP:$SQLITE_JAR:$SLF4J_API:$SLF4J_SIMPLE" > "$BUILD/classpath.txt"
rm -rf "$TMP" "$BUILD/classes"

# Smoke: the classes Iceberg needs at runtime resolve.
java -cp "$(cat "$BUILD/classpath.txt")" org.icebench.rest.RestCatalogServer --help >/dev/null \
  || die "built jar does not start (see above)"
echo "$STAMP_INPUT" > "$BUILD/.stamp"
done_msg "built $BUILD/rest-catalog.jar"
