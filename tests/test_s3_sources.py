"""Sets on S3 (issue 39): `generate --out s3://...` writes a base set straight onto the stack's
object store, and `matrix --source s3://...` feeds it to the writers from there, so a cluster shares
nothing but the object store and the catalog. local-services keeps its S3 server's data for it.

A set on S3 is held to its manifest as a local one is (a file changed there is refused, naming it);
the writers icebench cannot hand an S3 set to are refused by name, before any run."""

import json
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generators.place import CrcOutput, child, name_of, on_s3, place_of, write_bytes
from harness.base.errors import IcebenchError
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE
from harness.cli.main import main
from harness.services.object_store import SeaweedS3Server
from harness.services.stacks.local_services import KEPT_STORE

SET = "s3://icebench-sources/tiny"


def _records(capsys) -> list[dict]:
    out = capsys.readouterr().out
    runs = Path(out.split("results: ")[-1].split()[0])
    return [json.loads(line) for line in runs.read_text().splitlines()]


@pytest.fixture(scope="module")
def tiny_on_s3(settings):
    """`tiny` generated straight onto local-services' kept object store, once for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ICEBENCH_DATA_DIR", str(settings.data_dir))
        assert main(["generate", "--preset", "tiny", "--out", SET, "--stack", "local-services"]) == 0
    assert (settings.data_dir / KEPT_STORE).is_dir()
    return SET


def test_a_set_generated_onto_s3_is_fed_from_there_and_judged(tiny_on_s3, cli_settings, capsys):
    """The worker reads the set from S3 (no local copy exists) and the oracle passes the table; the
    record names where the source was read. A trailing slash names the same set."""
    code = main(["matrix", "--source", f"{tiny_on_s3}/", "--stack", "local-services",
                 "--writers", "pyiceberg-fast-append", "--scenarios", "append"])  # fmt: skip
    assert code == 0
    (record,) = _records(capsys)
    assert record["status"] == "ok" and record["verdict"]["passed"], record["error"]
    assert record["source_location"] == tiny_on_s3 and record["rows"] == 10_000
    assert not list(Path(cli_settings.data_dir).glob("**/icebench-sources"))


def test_spark_reads_a_set_on_s3_through_s3a(tiny_on_s3, cli_settings, capsys):
    pytest.importorskip("pyspark")
    code = main(["matrix", "--source", tiny_on_s3, "--stack", "local-services",
                 "--writers", "spark", "--scenarios", "append"])  # fmt: skip
    assert code == 0
    (record,) = _records(capsys)
    assert record["status"] == "ok" and record["verdict"]["passed"], record["error"]
    assert record["source_location"] == tiny_on_s3


def test_a_file_changed_on_s3_is_refused_naming_it(tiny_on_s3, settings, cli_settings, capsys):
    """Same size, other bytes: only the CRC-32 of the manifest can tell, and it does."""
    damaged = "s3://icebench-sources/tiny-damaged"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ICEBENCH_DATA_DIR", str(settings.data_dir))
        assert main(["generate", "--preset", "tiny", "--out", damaged, "--stack", "local-services"]) == 0
        with SeaweedS3Server().running(settings.data_dir / "unused", settings.data_dir / KEPT_STORE) as store:
            s3 = store.filesystem()
            key = "icebench-sources/tiny-damaged/part-00001.parquet"
            with s3.open_input_stream(key) as stream:
                content = bytearray(stream.read())
            content[len(content) // 2] ^= 0xFF
            with s3.open_output_stream(key) as stream:
                stream.write(bytes(content))
    capsys.readouterr()
    code = main(["matrix", "--source", damaged, "--stack", "local-services",
                 "--writers", "pyiceberg-fast-append", "--scenarios", "append"])  # fmt: skip
    assert code != 0
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "tiny-damaged/part-00001.parquet has CRC-32" in error and "changed since generated" in error


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["matrix", "--source", "s3://icebench-sources/none", "--stack", "local-services",
          "--writers", "pyiceberg-fast-append", "--scenarios", "append"], "no manifest.json there"),
        (["matrix", "--source", SET, "--writers", "pyiceberg-fast-append", "--scenarios", "append"],
         "no S3 endpoint"),
        (["matrix", "--source", SET, "--stack", "local-services", "--writers", "polars-sink,duckdb",
          "--scenarios", "append"], "polars-sink, duckdb: it reads its source files itself"),
        (["matrix", "--source", SET, "--stack", "local-services", "--writers", "pyiceberg-fast-append",
          "--scenarios", "upsert"], "need sets derived from it (changes)"),
        (["run", "--source", SET, "--writer", "pyiceberg-fast-append", "--scenario", "append"],
         "run takes local sets"),
        (["generate", "--preset", "tiny", "--out", SET], "the embedded stack has no object store"),
        (["generate", "--preset", "tiny", "--out", "/tmp/x", "--stack", "local-services"],
         "--stack is for --out s3://"),
    ],
)  # fmt: skip
def test_what_cannot_run_on_a_set_on_s3_is_one_line(tiny_on_s3, cli_settings, capsys, arguments, says):
    assert main(arguments) != 0
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and says in error, error


def test_the_kept_store_is_held_by_one_invocation_at_a_time(tmp_path):
    kept = tmp_path / "kept"
    with (
        SeaweedS3Server().running(tmp_path / "a", kept),
        pytest.raises(IcebenchError, match="in use by another icebench"),
        SeaweedS3Server().running(tmp_path / "b", kept),
    ):
        pass
    assert kept.is_dir()  # kept: not removed at the end, unlike a server's own folder


def test_an_s3_place_keeps_its_slashes_and_a_folder_is_a_path():
    assert on_s3("s3://b/p") and not on_s3(Path("/s3://x")) and not on_s3("/data/set")
    assert place_of("s3://b/p/") == "s3://b/p" and place_of("/data/set") == Path("/data/set")
    assert child("s3://b/p", "f.parquet") == "s3://b/p/f.parquet" and name_of("s3://b/p") == "p"
    assert child(Path("/d"), "f") == Path("/d/f")


def test_a_file_streamed_to_s3_gets_the_crc_its_bytes_have(tmp_path, monkeypatch):
    with SeaweedS3Server().running(tmp_path) as store:
        monkeypatch.setenv(SOURCES_ENDPOINT_VARIABLE, store.endpoint_url)
        for name, value in store.environment().items():
            monkeypatch.setenv(name, value)
        with CrcOutput("s3://icebench/x.parquet") as output:
            pq.write_table(pa.table({"a": list(range(1000))}), output)
        write_bytes("s3://icebench/y", b"abc")
        with store.filesystem().open_input_stream("icebench/x.parquet") as stream:
            content = stream.read()
    assert output.size == len(content) and output.crc_hex() == f"{zlib.crc32(content):08x}"
