"""The local-services servers admit only this invocation's credentials: the REST catalog its bearer
token, the S3 server (SeaweedFS) its generated key pair; the S3 server does what Iceberg writers ask
of a real store (multipart uploads, ranged reads, conditional writes); no secret is left behind."""

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
import pyarrow as pa
import pytest
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError
from pyarrow.fs import FileSelector
from pyiceberg.exceptions import UnauthorizedError

from harness.cli.main import main
from harness.run.runner import Runner
from harness.services.object_store import S3Endpoint, SeaweedS3Server
from harness.services.stacks.base import CATALOG_TOKEN_VARIABLE
from harness.services.stacks.local_services import LocalServicesStack
from reports.baseline import newest_results_folder


def http_status(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, method=method, headers=headers or {}, data=b"" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


# ---------------------------------------------------------------- REST catalog: bearer token


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token", "Basic dXNlcjpwYXNz", "Bearer", "Bearer "]
)
def test_rest_catalog_refuses_requests_without_the_runs_token(services_runner: Runner, authorization):
    uri = services_runner.stack.catalog_uri
    headers = {"Authorization": authorization} if authorization else {}
    for method, path in (("GET", "/v1/config"), ("GET", "/v1/namespaces"), ("POST", "/v1/namespaces")):
        status, body = http_status(f"{uri}{path}", method, headers)
        assert status == 401, (method, path, status)
        error = json.loads(body)["error"]
        assert error["type"] == "NotAuthorizedException" and error["code"] == 401


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])  # the scheme is case-insensitive (RFC 6750)
def test_rest_catalog_answers_the_runs_token(services_runner: Runner, scheme):
    token = os.environ[CATALOG_TOKEN_VARIABLE]  # set by the running stack, for its clients
    status, body = http_status(
        f"{services_runner.stack.catalog_uri}/v1/namespaces", headers={"Authorization": f"{scheme} {token}"}
    )
    assert status == 200 and "namespaces" in json.loads(body)


def test_pyiceberg_gets_the_token_from_the_environment_only(services_runner: Runner, tmp_path, monkeypatch):
    stack = services_runner.stack
    run = stack.catalog_for_run(tmp_path, "token_from_environment")
    assert not any("token" in key or "secret" in key for key in run.properties)  # spec files hold these
    catalog = (
        run.open()
    )  # pyiceberg's RestCatalog, Authorization: Bearer from PYICEBERG_CATALOG__ICEBENCH__TOKEN
    catalog.create_namespace(run.namespace)
    # The server writes the table's metadata to S3 through Iceberg's S3FileIO, pyiceberg the
    # data through pyarrow's S3: both with the run's key pair.
    table = catalog.create_table(f"{run.namespace}.rows", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    assert catalog.load_table(f"{run.namespace}.rows").scan().to_arrow().num_rows == 3
    stack.release(run, keep=False)

    monkeypatch.delenv(CATALOG_TOKEN_VARIABLE)
    with pytest.raises(UnauthorizedError):
        run.open()


# ---------------------------------------------------------------- S3 server: keys and protocol


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    with SeaweedS3Server().running(tmp_path_factory.mktemp("s3")) as endpoint:
        endpoint.filesystem().open_output_stream(f"{endpoint.bucket}/kept.txt").close()
        yield endpoint


def s3_client(endpoint: S3Endpoint, access_key_id: str, secret_access_key: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint.endpoint_url,
        region_name=endpoint.region,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        config=BotoConfig(retries={"max_attempts": 1}, s3={"addressing_style": "path"}),
    )


def refused_status(operation) -> tuple[int, str]:
    with pytest.raises(ClientError) as refused:
        operation()
    return refused.value.response["ResponseMetadata"]["HTTPStatusCode"], refused.value.response["Error"][
        "Code"
    ]


@pytest.mark.parametrize(
    ("key_pair", "expected_code"),
    [
        (lambda e: (e.access_key_id, "wrong-secret-key"), "SignatureDoesNotMatch"),
        (lambda e: ("AKIAUNKNOWNKEY000000", e.secret_access_key), "InvalidAccessKeyId"),
    ],
    ids=["wrong-secret", "unknown-key"],
)
def test_the_s3_server_refuses_other_keys(s3_endpoint: S3Endpoint, key_pair, expected_code):
    client = s3_client(s3_endpoint, *key_pair(s3_endpoint))
    bucket = s3_endpoint.bucket
    for operation in (
        lambda: client.list_buckets(),
        lambda: client.list_objects_v2(Bucket=bucket),
        lambda: client.get_object(Bucket=bucket, Key="kept.txt"),
        lambda: client.put_object(Bucket=bucket, Key="intruder.txt", Body=b"x"),
        lambda: client.delete_object(Bucket=bucket, Key="kept.txt"),
    ):
        assert refused_status(operation) == (403, expected_code)
    assert s3_endpoint.filesystem().get_file_info(f"{bucket}/kept.txt").size == 0  # nothing deleted


def test_the_s3_server_refuses_unsigned_requests(s3_endpoint: S3Endpoint):
    for path in ("/", f"/{s3_endpoint.bucket}", f"/{s3_endpoint.bucket}/kept.txt"):
        assert http_status(f"{s3_endpoint.endpoint_url}{path}")[0] == 403, path
    assert http_status(f"{s3_endpoint.endpoint_url}/{s3_endpoint.bucket}/intruder.txt", "PUT")[0] == 403


def test_the_s3_server_admits_the_runs_keys(s3_endpoint: S3Endpoint):
    client = s3_client(s3_endpoint, s3_endpoint.access_key_id, s3_endpoint.secret_access_key)
    client.put_object(Bucket=s3_endpoint.bucket, Key="boto3.txt", Body=b"boto3")
    filesystem = s3_endpoint.filesystem()  # pyarrow's S3 client, as pyiceberg's FileIO uses it
    with filesystem.open_input_stream(f"{s3_endpoint.bucket}/boto3.txt") as stream:
        assert stream.read() == b"boto3"
    names = {info.base_name for info in filesystem.get_file_info(FileSelector(s3_endpoint.bucket))}
    assert {"kept.txt", "boto3.txt"} <= names
    filesystem.delete_file(f"{s3_endpoint.bucket}/boto3.txt")


def test_the_s3_server_assembles_multipart_uploads_and_serves_ranges(s3_endpoint: S3Endpoint):
    """Writers upload large data files in parts (pyarrow past 5 MiB, Iceberg Java's S3FileIO) and
    readers fetch footers and row groups by range."""
    client = s3_client(s3_endpoint, s3_endpoint.access_key_id, s3_endpoint.secret_access_key)
    bucket, key, part = s3_endpoint.bucket, "multipart.bin", 5 * 2**20
    upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = [
        client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=n, Body=bytes([n]) * part)
        for n in (1, 2, 3)
    ]
    client.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload,
        MultipartUpload={"Parts": [{"ETag": p["ETag"], "PartNumber": n} for n, p in enumerate(parts, 1)]},
    )  # fmt: skip
    assert client.head_object(Bucket=bucket, Key=key)["ContentLength"] == 3 * part
    straddling = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={part - 2}-{part + 1}")
    assert straddling["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert straddling["Body"].read() == b"\x01\x01\x02\x02"
    abandoned = client.create_multipart_upload(Bucket=bucket, Key="abandoned.bin")["UploadId"]
    client.abort_multipart_upload(Bucket=bucket, Key="abandoned.bin", UploadId=abandoned)
    assert refused_status(lambda: client.head_object(Bucket=bucket, Key="abandoned.bin"))[0] == 404


def test_the_s3_server_honours_conditional_writes(s3_endpoint: S3Endpoint):
    """If-None-Match: * creates only what does not exist, If-Match replaces only the version read:
    what a catalog-less commit (a compare-and-swap of a metadata pointer) needs of the store."""
    client = s3_client(s3_endpoint, s3_endpoint.access_key_id, s3_endpoint.secret_access_key)
    bucket, key = s3_endpoint.bucket, "pointer.json"

    def put(body: bytes, **condition: str) -> None:
        client.put_object(Bucket=bucket, Key=key, Body=body, **condition)

    put(b"v1", IfNoneMatch="*")
    assert refused_status(lambda: put(b"v2", IfNoneMatch="*"))[0] == 412
    etag = client.head_object(Bucket=bucket, Key=key)["ETag"]
    assert refused_status(lambda: put(b"v2", IfMatch='"0"'))[0] == 412
    put(b"v2", IfMatch=etag)
    assert refused_status(lambda: put(b"v3", IfMatch=etag))[0] == 412
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == b"v2"


# ---------------------------------------------------------------- nothing left behind


@pytest.fixture
def secrets_of_the_stack(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The S3 keys and the catalog token the next local-services stack generates (spied, not
    replaced: the servers and the secrets stay real)."""
    seen: list[str] = []
    start_services = LocalServicesStack.running

    @contextmanager
    def recording(self: LocalServicesStack, folder: Path) -> Iterator[None]:
        with start_services(self, folder):
            seen.extend(
                (
                    self.endpoint.access_key_id,
                    self.endpoint.secret_access_key,
                    os.environ[CATALOG_TOKEN_VARIABLE],
                )
            )
            yield

    monkeypatch.setattr(LocalServicesStack, "running", recording)
    return seen


@pytest.mark.usefixtures("cli_settings", "tiny_sets")
def test_icebench_run_on_local_services_leaves_no_secret_in_results(settings, secrets_of_the_stack):
    run = "run --stack local-services --scenario append --writer pyiceberg-add-files --preset tiny"
    code = main([*run.split(), "--batch-rows", "5000", "--memory", "1g"])
    assert code == 0
    assert len(secrets_of_the_stack) == 3
    folder = newest_results_folder(settings.results_dir)
    written = [path for path in folder.rglob("*") if path.is_file()]
    names = {path.name for path in written}
    assert {
        "environment.json",
        "runs.jsonl",
        "worker-spec.json",
        "rest-catalog.log",
        "s3-seaweedfs.log",
    } <= names
    for path in written:
        content = path.read_bytes()
        for secret in secrets_of_the_stack:
            assert secret.encode() not in content, f"a secret leaked into {path}"
    assert os.environ.get(CATALOG_TOKEN_VARIABLE) != secrets_of_the_stack[2]  # gone with its stack
