"""Where a parquet set lives: a local folder, or a prefix on S3 (`s3://bucket/prefix`), so a cluster
shares nothing but the object store and the catalog. Both are read and written through pyarrow's
file systems; the S3 endpoint and its key pair come from the environment the stack set up (the
endpoint in SOURCES_ENDPOINT_VARIABLE, the keys as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), so no
secret is ever part of a location, a spec file or a record."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from types import TracebackType

import pyarrow.parquet as pq
from pyarrow import fs as pafs

from harness.base.errors import SourceError, first_line
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE

S3_SCHEME = "s3://"

Place = Path | str  # a local folder, or an S3 location (`s3://...`); told apart by that prefix only


def on_s3(place: Place | str) -> bool:
    return str(place).startswith(S3_SCHEME)


def place_of(text: str | Path) -> Place:
    """A location as given: an S3 URI stays a string (its slashes kept), anything else is a path."""
    return str(text).rstrip("/") if on_s3(text) else Path(text)


def child(place: Place, name: str) -> Place:
    return f"{place}/{name}" if on_s3(place) else Path(place) / name


def name_of(place: Place) -> str:
    return str(place).rsplit("/", 1)[-1] if on_s3(place) else Path(place).name


def filesystem(place: Place) -> tuple[pafs.FileSystem, str]:
    """The file system and the path in it that `place` is."""
    if not on_s3(place):
        return pafs.LocalFileSystem(), str(place)
    place = str(place)
    bucket_and_key = place.removeprefix(S3_SCHEME)
    if not bucket_and_key or bucket_and_key.startswith("/"):
        raise SourceError(f"{place}: an S3 location is s3://BUCKET/PREFIX")
    return s3_filesystem(place), bucket_and_key


def s3_filesystem(place: str) -> pafs.S3FileSystem:
    endpoint = os.environ.get(SOURCES_ENDPOINT_VARIABLE)
    if endpoint is None:
        raise SourceError(
            f"{place}: no S3 endpoint for sets on S3 (a stack with an object store: "
            f"--stack local-services, or external with s3_endpoint)"
        )
    return pafs.S3FileSystem(
        endpoint_override=endpoint or None,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        force_virtual_addressing=False,
        allow_bucket_creation=True,
    )


def parquet_file(path: Place) -> pq.ParquetFile:
    """A set's file, opened where it lives (a local file exactly as before S3 sets existed)."""
    if on_s3(path):
        found, key = filesystem(path)
        return pq.ParquetFile(key, filesystem=found)
    return pq.ParquetFile(Path(path))


def exists(place: Place) -> bool:
    found, path = filesystem(place)
    try:
        return found.get_file_info(path).type != pafs.FileType.NotFound
    except OSError as exc:
        raise SourceError(f"{place}: the object store did not answer ({first_line(exc)[:200]})") from None


def require_set_folder(place: Place) -> None:
    """A set's place exists: an S3 prefix with objects under it, or a local folder."""
    if on_s3(place):
        if not exists(place):
            raise SourceError(f"source {place} does not exist")
    elif not Path(place).is_dir():
        raise SourceError(f"source {place} does not exist or is not a folder")


def read_bytes(place: Place) -> bytes:
    found, path = filesystem(place)
    with found.open_input_stream(path) as stream:
        return stream.read()


def write_bytes(place: Place, content: bytes) -> None:
    found, path = filesystem(place)
    with found.open_output_stream(path) as stream:
        stream.write(content)


def empty_folder(place: Place) -> None:
    """The prefix emptied (created where a bucket or folder is missing)."""
    found, path = filesystem(place)
    found.create_dir(path)
    found.delete_dir_contents(path, missing_dir_ok=True)


class CrcOutput:
    """An output stream that keeps the CRC-32 and length of what passes through it: a set written
    straight onto S3 gets its manifest's CRC-32s without reading its files back."""

    def __init__(self, place: Place) -> None:
        found, path = filesystem(place)
        self.stream = found.open_output_stream(path)
        self.crc = 0
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return self.stream.write(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()

    @property
    def closed(self) -> bool:
        return self.stream.closed

    def crc_hex(self) -> str:
        return f"{self.crc:08x}"

    def __enter__(self) -> CrcOutput:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
