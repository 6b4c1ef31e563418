#!/bin/sh
# Start the icebench REST catalog server like apache/iceberg-rest-fixture: listens on 0.0.0.0:$REST_PORT,
# catalog properties from CATALOG_* env (CATALOG_FOO__BAR_BAZ -> foo-bar.baz), S3 credentials from
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, region from AWS_REGION (or CATALOG_S3_REGION).
# ICEBENCH_REST_TOKEN (optional, read by the server itself, never passed as an argument): every
# request must then carry `Authorization: Bearer <token>`; unset or empty, none is checked.
set -eu
# Iceberg's S3FileIO needs the AWS SDK v2 bundle, which this image cannot have; the server's own
# SigV4 FileIO does the same job for catalog metadata.
if [ "${CATALOG_IO__IMPL:-}" = "org.apache.iceberg.aws.s3.S3FileIO" ]; then
  echo "entrypoint: CATALOG_IO__IMPL=S3FileIO -> org.icebench.rest.SigV4S3FileIO (no AWS SDK in this image)"
  CATALOG_IO__IMPL=org.icebench.rest.SigV4S3FileIO
  export CATALOG_IO__IMPL
fi
CP=/opt/rest/rest-catalog.jar
for jar in /opt/rest/lib/*.jar; do CP="$CP:$jar"; done
CP="$CP:/usr/share/java/sqlite-jdbc.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar"
export ICEBENCH_REST_HOST="${ICEBENCH_REST_HOST:-0.0.0.0}" ICEBENCH_REST_PORT="${REST_PORT:-8181}"
# shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel="${ICEBENCH_REST_LOG_LEVEL:-warn}" \
  ${JAVA_OPTS:-} -cp "$CP" org.icebench.rest.RestCatalogServer "$@"
