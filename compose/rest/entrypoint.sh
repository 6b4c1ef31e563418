#!/bin/sh
# Start the icebench REST catalog server (Apache Iceberg's REST fixture) like
# apache/iceberg-rest-fixture: listens on 0.0.0.0:$REST_PORT, catalog properties from CATALOG_* env
# (CATALOG_FOO__BAR_BAZ -> foo-bar.baz), S3 credentials from AWS_ACCESS_KEY_ID /
# AWS_SECRET_ACCESS_KEY, region from AWS_REGION. ICEBENCH_REST_TOKEN (optional, read by the server
# itself, never passed as an argument): every request must then carry
# `Authorization: Bearer <token>`; unset or empty, none is checked.
set -eu
CP=/opt/rest/rest-catalog.jar
for jar in /opt/rest/lib/*.jar; do CP="$CP:$jar"; done
export ICEBENCH_REST_HOST="${ICEBENCH_REST_HOST:-0.0.0.0}" ICEBENCH_REST_PORT="${REST_PORT:-8181}"
# shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel="${ICEBENCH_REST_LOG_LEVEL:-warn}" \
  ${JAVA_OPTS:-} -cp "$CP" org.apache.iceberg.rest.IcebenchRestServer "$@"
