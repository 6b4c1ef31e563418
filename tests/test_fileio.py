"""--fileio: the pyiceberg writers through pyarrow's, fsspec's or OpenDAL's IO, named in the record."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli.main import main
from harness.engines.fileio import OpenDalFileIO
from harness.run.runner import Runner, RunPlan
from harness.services.envs import Variant


def test_opendal_file_io_writes_reads_seeks_and_deletes(tmp_path):
    io = OpenDalFileIO()
    location = f"file://{tmp_path}/data/a.parquet"
    output = io.new_output(location)
    assert not output.exists()
    with output.create() as stream:
        pq.write_table(pa.table({"id": list(range(1000))}), stream)
    with pytest.raises(FileExistsError):
        output.create()
    source = io.new_input(location)
    assert source.exists() and len(source) == (tmp_path / "data" / "a.parquet").stat().st_size
    with source.open() as stream:
        assert stream.read(4) == b"PAR1"
        stream.seek(-4, 2)
        assert stream.read() == b"PAR1"
        stream.seek(0)
        assert pq.ParquetFile(stream).metadata.num_rows == 1000
    io.delete(location)
    assert not io.new_input(location).exists()
    with pytest.raises(FileNotFoundError):
        io.new_input(location).open()


def test_opendal_file_io_reads_whole_parquet_footers_from_s3(services_runner):
    """OpenDAL's S3 reader returns short reads; pyarrow would take one for the file's end."""
    endpoint = services_runner.stack.endpoint
    io = OpenDalFileIO(
        {
            "s3.endpoint": endpoint.endpoint_url,
            "s3.region": endpoint.region,
            "s3.path-style-access": "true",
            "s3.access-key-id": endpoint.access_key_id,
            "s3.secret-access-key": endpoint.secret_access_key,
        }
    )
    location = f"s3://{endpoint.bucket}/test-fileio/footer.parquet"
    table = pa.table({"id": list(range(100_000)), "text": [str(i) for i in range(100_000)]})
    with io.new_output(location).create(overwrite=True) as stream:
        pq.write_table(table, stream)
    try:
        with io.new_input(location).open() as stream:
            assert pq.ParquetFile(stream).metadata.num_rows == 100_000
            stream.seek(0)
            assert len(stream.read(10_000_000)) == len(io.new_input(location))  # to the end, whole
    finally:
        io.delete(location)


# pyiceberg-add-files reads every file's footer back through the FileIO.
def test_opendal_appends_on_s3_and_the_record_names_it(services_settings, services_runner, tiny_sets):
    runner = Runner(
        services_settings, services_runner.store, services_runner.stack, Variant("fileio", "opendal")
    )
    record = runner.run(RunPlan("append", "pyiceberg-add-files", "tiny", tiny_sets, 5_000, cap_bytes=1 << 30))
    assert record.status == "ok" and record.verdict.passed, record.error
    assert record.file_io and record.file_io.startswith("opendal "), record.file_io
    assert record.variant == "fileio opendal"
    assert record.object_store_requests.get("put")  # its files went to the S3 server
    # A writer with an engine of its own is not run again as if the axis changed it.
    other = runner.run(RunPlan("append", "polars-sink", "tiny", tiny_sets, 5_000, cap_bytes=1 << 30))
    assert other.status == "unsupported" and "not pyiceberg's FileIO" in other.error


def test_the_default_is_pyarrow_and_an_unknown_file_io_is_one_line(runner, tiny_sets, capsys, cli_settings):
    record = runner.run(RunPlan("append", "pyiceberg-add-files", "tiny", tiny_sets, 5_000, cap_bytes=1 << 30))
    assert record.file_io and record.file_io.startswith("pyarrow ")
    code = main(["run", "--scenario", "append", "--writer", "pyiceberg-table", "--fileio", "opendall"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "unknown FileIO 'opendall' (did you mean opendal?)" in err[-1], err
