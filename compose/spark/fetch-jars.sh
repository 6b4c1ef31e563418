#!/usr/bin/env bash
# The jars Spark needs for Iceberg, from Maven Central into ./build/spark-<line>/iceberg-<version>/
# (Maven keeps its own cache in ~/.m2): Iceberg's Spark runtime (its REST client and S3FileIO
# inside), the AWS SDK bundle S3FileIO runs on, and SQLite's JDBC driver (the embedded catalog file).
#   compose/spark/fetch-jars.sh [ICEBERG_VERSION ...]   (default: the pinned one below)
#   SPARK_LINE=4.0_2.13 compose/spark/fetch-jars.sh 1.10.1   (Spark 4.0's runtime: pyspark 4.0)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEFAULT_ICEBERG=1.10.1   # harness/engines/spark.py DEFAULT_ICEBERG_SPARK
SPARK_LINE=${SPARK_LINE:-3.5_2.12}   # pyspark 3.5 (requirements.lock); harness/engines/spark.py SPARK_LINES
SQLITE_JDBC=org.xerial:sqlite-jdbc:3.50.3.0   # harness/engines/spark.py SQLITE_JDBC
die() { echo "fetch-jars.sh: $*" >&2; exit 1; }
"$HERE/../need.sh" mvn maven
[[ $SPARK_LINE =~ ^[0-9]+\.[0-9]+_2\.1[23]$ ]] || die "not a Spark line: '$SPARK_LINE' (e.g. 3.5_2.12, 4.0_2.13)"
for version in "${@:-$DEFAULT_ICEBERG}"; do
  [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "not an Iceberg release: '$version' (e.g. 1.9.2)"
  out="$HERE/build/spark-$SPARK_LINE/iceberg-$version"
  [[ -f $out/.complete ]] && continue
  echo "fetch-jars.sh: Iceberg $version's Spark $SPARK_LINE runtime and AWS bundle from Maven Central"
  rm -rf "$out" && mkdir -p "$out"
  for artifact in "org.apache.iceberg:iceberg-spark-runtime-$SPARK_LINE:$version" \
                  "org.apache.iceberg:iceberg-aws-bundle:$version" "$SQLITE_JDBC"; do
    log=$(mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy -Dartifact="$artifact" -DoutputDirectory="$out" 2>&1) \
      || { echo "$log" >&2; die "mvn could not fetch $artifact (Maven Central unreachable, or no such release?)"; }
  done
  touch "$out/.complete"
done
