#!/usr/bin/env bash
# Hadoop's S3A file system for Spark, from Maven Central into ./build/s3a-<hadoop>/: hadoop-aws of
# the Hadoop release pyspark ships and the AWS SDK bundle that release was built with (Maven
# resolves which), so Spark reads a source set on S3 (`icebench matrix --source s3://...`).
#   compose/spark/fetch-s3a-jars.sh HADOOP_VERSION   (e.g. 3.3.4: pyspark 3.5; 3.4.2: pyspark 4.1)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "fetch-s3a-jars.sh: $*" >&2; exit 1; }
"$HERE/../need.sh" mvn maven
version=${1:-}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "not a Hadoop release: '$version' (e.g. 3.3.4)"
out="$HERE/build/s3a-$version"
[[ -f $out/.complete ]] && exit 0
echo "fetch-s3a-jars.sh: hadoop-aws $version and its AWS SDK bundle from Maven Central"
rm -rf "$out" && mkdir -p "$out"
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>icebench</groupId><artifactId>s3a-jars</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
# Only hadoop-aws and the SDK bundle (v1: aws-java-sdk-bundle; v2: software.amazon.awssdk's bundle):
# the rest of Hadoop is inside pyspark already.
log=$(mvn -B -q -f "$work/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DincludeArtifactIds=hadoop-aws,aws-java-sdk-bundle,bundle -DincludeScope=runtime -DoutputDirectory="$out" 2>&1) \
  || { echo "$log" >&2; die "mvn could not fetch hadoop-aws $version (Maven Central unreachable, or no such release?)"; }
ls "$out"/hadoop-aws-*.jar >/dev/null 2>&1 || die "hadoop-aws $version fetched no jar"
touch "$out/.complete"
