"""What a write costs the object store: the request counter in front of the S3 server counts every
request by kind and the bytes both ways, passes SigV4-signed requests through untouched, and a run
on local-services records its write's and its scans' requests."""

from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config as BotoConfig

from harness.base.results import read_runs
from harness.cli.main import main
from harness.services.object_store import S3Endpoint, SeaweedS3Server
from harness.services.s3_counter import COUNTER_BINARY, Counter, counting, traffic_between
from reports.baseline import newest_results_folder

pytestmark = pytest.mark.skipif(not COUNTER_BINARY.is_file(), reason="run make s3-counter")


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Endpoint, Counter]]:
    folder = tmp_path_factory.mktemp("counted")
    with SeaweedS3Server().running(folder) as store, counting(folder, store) as endpoint_and_counter:
        yield endpoint_and_counter


def test_every_request_is_counted_by_kind_with_its_bytes(counted: tuple[S3Endpoint, Counter]):
    endpoint, counter = counted
    client = boto3.client(
        "s3", endpoint_url=endpoint.endpoint_url, region_name=endpoint.region,
        aws_access_key_id=endpoint.access_key_id, aws_secret_access_key=endpoint.secret_access_key,
        config=BotoConfig(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )  # fmt: skip
    bucket = endpoint.bucket
    before = counter.traffic()
    client.put_object(Bucket=bucket, Key="t/a.bin", Body=b"x" * 1000)  # signed for the counter's host
    client.head_object(Bucket=bucket, Key="t/a.bin")
    assert client.get_object(Bucket=bucket, Key="t/a.bin", Range="bytes=0-9")["Body"].read() == b"x" * 10
    assert len(client.get_object(Bucket=bucket, Key="t/a.bin")["Body"].read()) == 1000
    client.list_objects_v2(Bucket=bucket, Prefix="t/")
    upload = client.create_multipart_upload(Bucket=bucket, Key="t/b.bin")["UploadId"]
    part = client.upload_part(Bucket=bucket, Key="t/b.bin", UploadId=upload, PartNumber=1, Body=b"y" * 2000)
    client.complete_multipart_upload(
        Bucket=bucket, Key="t/b.bin", UploadId=upload,
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )  # fmt: skip
    client.delete_object(Bucket=bucket, Key="t/a.bin")
    traffic = traffic_between(before, counter.traffic())
    assert traffic is not None
    assert traffic.requests == {
        "delete": 1, "get": 1, "get_range": 1, "head": 1, "list": 1, "multipart_complete": 1,
        "multipart_start": 1, "put": 1, "upload_part": 1,
    }  # fmt: skip
    assert traffic.bytes_in >= 3000  # the two bodies (and the completion's XML)
    assert 1010 <= traffic.bytes_out < 1010 + 4096  # the two reads, and a few small XML answers


@pytest.mark.usefixtures("cli_settings", "tiny_sets")
def test_a_run_on_local_services_records_what_its_write_and_scans_cost_the_store(settings):
    run = "run --stack local-services --scenario append --writer pyiceberg-add-files --preset tiny"
    assert main([*run.split(), "--batch-rows", "5000", "--memory", "1g", "--reads", "3"]) == 0
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert record.verdict is not None and record.verdict.passed
    writes = record.object_store_requests
    assert writes.get("put", 0) + writes.get("upload_part", 0) >= record.data_files  # every data file
    assert record.write_requests == sum(writes.values())
    assert record.object_store_bytes["in"] > 0
    assert record.full_scan_requests and record.full_scan_bytes_out
    assert record.selective_scan_requests and record.selective_scan_requests < record.full_scan_requests
    # The table's total cost (--reads 3): the write's requests and three of each scan's, priced.
    one_read = record.full_scan_requests_usd + record.selective_scan_requests_usd
    assert record.reads == 3 and 0 < record.selective_scan_requests_usd < record.full_scan_requests_usd
    assert record.total_cost_usd == pytest.approx(record.write_requests_usd + 3 * one_read)


@pytest.mark.usefixtures("cli_settings", "tiny_sets")
def test_the_embedded_stack_counts_nothing(settings):
    run = "run --scenario append --writer pyiceberg-add-files --preset tiny"
    assert main([*run.split(), "--batch-rows", "5000", "--memory", "1g"]) == 0
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert record.object_store_requests == {} and record.write_requests is None
