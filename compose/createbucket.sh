#!/bin/sh
# One-shot: create the warehouse bucket. Runs in minio/mc (uses mc) or in the icebench worker
# image (no mc: uses boto3 from its venv). Idempotent. Env: S3_ENDPOINT, S3_BUCKET,
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION.
set -eu
: "${S3_ENDPOINT:=http://minio:9000}" "${S3_BUCKET:=warehouse}" "${AWS_REGION:=us-east-1}"
if command -v mc >/dev/null 2>&1; then
  i=0
  until mc alias set s3 "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >/dev/null; do
    i=$((i + 1)); [ "$i" -lt 30 ] || { echo "createbucket: $S3_ENDPOINT does not answer" >&2; exit 1; }
    sleep 1
  done
  mc mb --ignore-existing "s3/$S3_BUCKET"
else
  python3 - <<'PY'
import os, sys, time
import boto3
from botocore.exceptions import ClientError, EndpointConnectionError

s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name=os.environ["AWS_REGION"])
bucket = os.environ["S3_BUCKET"]
for attempt in range(30):
    try:
        s3.create_bucket(Bucket=bucket)
        break
    except ClientError as e:
        if e.response["Error"]["Code"] in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            break
        raise
    except EndpointConnectionError:
        if attempt == 29:
            sys.exit(f"createbucket: {os.environ['S3_ENDPOINT']} does not answer")
        time.sleep(1)
print(f"Bucket created successfully `s3/{bucket}`.")
PY
fi
