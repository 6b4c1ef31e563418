#!/usr/bin/env bash
# Build the icebench Iceberg REST catalog server into ./build (idempotent, cached).
#   Inputs: pom.xml's pinned Maven Central artifacts (Apache Iceberg's REST fixture, JdbcCatalog,
#   S3FileIO + AWS SDK bundle, Jetty, sqlite-jdbc; Maven's own cache ~/.m2 keeps them), and ./src.
# Output: build/rest-catalog.jar (the launcher), build/lib/*.jar, build/classpath.txt.
# Env: FORCE=1 to rebuild.
set -euo pipefail
START_NS=$(date +%s%N)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"

die() { echo "build.sh: $*" >&2; exit 1; }
done_msg() { local ms=$(( ($(date +%s%N) - START_NS) / 1000000 )); printf 'build.sh: %s (%d.%03ds)\n' "$1" $((ms / 1000)) $((ms % 1000)); }

# --- a JDK and Maven, from Debian where missing -------------------------------------------
"$HERE/../need.sh" javac openjdk-17-jdk-headless mvn maven
javac -version 2>&1 | grep -qE 'javac (1[7-9]|[2-9][0-9])' || die "need javac >= 17, got: $(javac -version 2>&1)"

# --- build (skipped when inputs are unchanged) -------------------------------------------
STAMP_INPUT=$( { cat "$0" "$HERE/pom.xml"; find "$HERE/src" -name '*.java' | sort | xargs cat; } \
  | sha256sum | cut -d' ' -f1)
if [[ ${FORCE:-0} != 1 && -f $BUILD/.stamp && $(cat "$BUILD/.stamp") == "$STAMP_INPUT" \
      && -f $BUILD/rest-catalog.jar && -f $BUILD/classpath.txt ]]; then
  done_msg "up to date: $BUILD/rest-catalog.jar"
  exit 0
fi
rm -rf "$BUILD"
mkdir -p "$BUILD/lib" "$BUILD/classes"
echo "build.sh: fetching pom.xml's jars from Maven Central (~90 MB the first time, then ~/.m2)"
# Maven's output only on failure (quiet, it still prints colour resets).
mvn_log=$(mvn -B -q -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$BUILD/lib" 2>&1) \
  || { echo "$mvn_log" >&2; die "mvn dependency:copy-dependencies failed (Maven Central unreachable?)"; }
CP=$(find "$BUILD/lib" -name '*.jar' | sort | paste -sd:)
find "$HERE/src" -name '*.java' > "$BUILD/sources.txt"
javac --release 17 -nowarn -encoding UTF-8 -cp "$CP" -d "$BUILD/classes" @"$BUILD/sources.txt" \
  || die "javac failed"
jar --create --file "$BUILD/rest-catalog.jar" -C "$BUILD/classes" . || die "jar failed"
echo "$BUILD/rest-catalog.jar:$CP" > "$BUILD/classpath.txt"
rm -rf "$BUILD/classes" "$BUILD/sources.txt"

# Smoke: the launcher and the classes it needs resolve (an unknown flag exits 2 after loading).
set +e
java -cp "$(cat "$BUILD/classpath.txt")" org.apache.iceberg.rest.IcebenchRestServer --version x \
  >/dev/null 2>&1
code=$?
set -e
[[ $code == 2 ]] || die "built jar does not start (exit $code)"
echo "$STAMP_INPUT" > "$BUILD/.stamp"
done_msg "built $BUILD/rest-catalog.jar"
