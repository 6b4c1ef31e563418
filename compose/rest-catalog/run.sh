#!/usr/bin/env bash
# Start the REST catalog server (builds first if needed). All arguments go to the server:
#   ./run.sh --port 8181 --warehouse s3://bucket/prefix --jdbc-uri jdbc:sqlite:/path/catalog.db \
#            --prop s3.endpoint=http://127.0.0.1:9000 --prop s3.path-style-access=true
# S3 credentials: env AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. JAVA_OPTS adds JVM options.
# Bearer token the server demands on every request: env ICEBENCH_REST_TOKEN (unset: none).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -f $HERE/build/classpath.txt ]]; then "$HERE/build.sh" >&2; fi
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel="${ICEBENCH_REST_LOG_LEVEL:-warn}" \
  ${JAVA_OPTS:-} -cp "$(cat "$HERE/build/classpath.txt")" org.apache.iceberg.rest.IcebenchRestServer "$@"
