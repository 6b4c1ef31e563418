"""The FileIO pyiceberg writes and reads files through (`--fileio`): pyarrow's filesystems (its
default), fsspec (s3fs on S3), or OpenDAL, the Rust IO layer iceberg-rust is built on, through its
Python binding behind pyiceberg's `py-io-impl` interface (pyiceberg-core 0.11 binds no FileIO of
iceberg-rust's own: harness/engines/writers/iceberg_rust.py's history).

Seed 2's question ("fast yet small") is answered by running the pyiceberg writers with each and
comparing memory, time, the object store's requests and the install footprint
(benchmarks/fileio_footprint.py).
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import urlparse

import opendal
from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.typedef import EMPTY_DICT, Properties

from harness.engines.choices import FILE_IOS


def file_io_label(io: FileIO) -> str:
    """What a record says of the FileIO a table was written through: its name and library version."""
    implementation = f"{type(io).__module__}.{type(io).__qualname__}"
    for name, (impl, distribution) in FILE_IOS.items():
        if impl == implementation:
            try:
                return f"{name} {version(distribution)}"
            except PackageNotFoundError:
                return name
    return implementation


class OpenDalFileIO(FileIO):
    """pyiceberg's FileIO on OpenDAL's operators: `fs` for local paths, `s3` for S3 (the
    catalog's s3.* properties, the key pair from them or from the AWS_* environment)."""

    def __init__(self, properties: Properties = EMPTY_DICT) -> None:
        super().__init__(properties)
        self._operators: dict[tuple[str, str], opendal.Operator] = {}

    def _locate(self, location: str) -> tuple[opendal.Operator, str]:
        url = urlparse(location)
        if url.scheme in ("", "file"):
            key = ("fs", "")
            path = url.path if url.scheme else location
        elif url.scheme in ("s3", "s3a", "s3n"):
            key = ("s3", url.netloc)
            path = url.path
        else:
            raise ValueError(
                f"OpenDalFileIO cannot open {location}: scheme {url.scheme!r} (file and s3 only)"
            )
        if key not in self._operators:
            self._operators[key] = self._operator(*key)
        return self._operators[key], path.lstrip("/")

    def _operator(self, scheme: str, bucket: str) -> opendal.Operator:
        if scheme == "fs":
            return opendal.Operator("fs", root="/")
        get = self.properties.get
        options = {
            "bucket": bucket,
            "region": get("s3.region") or os.environ.get("AWS_REGION", "us-east-1"),
            "access_key_id": get("s3.access-key-id") or os.environ.get("AWS_ACCESS_KEY_ID", ""),
            "secret_access_key": get("s3.secret-access-key") or os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
            "disable_config_load": "true",  # no ~/.aws, no instance metadata: only what the run gives
        }
        if endpoint := get("s3.endpoint"):
            options["endpoint"] = endpoint
        if get("s3.path-style-access", "").lower() not in ("true", "1"):
            options["enable_virtual_host_style"] = "true"
        return opendal.Operator("s3", **options)

    def new_input(self, location: str) -> InputFile:
        operator, path = self._locate(location)
        return OpenDalInputFile(location, operator, path)

    def new_output(self, location: str) -> OutputFile:
        operator, path = self._locate(location)
        return OpenDalOutputFile(location, operator, path)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        name = location if isinstance(location, str) else location.location
        operator, path = self._locate(name)
        operator.delete(path)


class _OpenDalPath:
    """A location's operator and path, its size and existence: what input and output files share."""

    def __init__(self, location: str, operator: opendal.Operator, path: str) -> None:
        super().__init__(location)  # type: ignore[call-arg]  # InputFile's or OutputFile's
        self._operator, self._path = operator, path

    def __len__(self) -> int:
        return int(self._operator.stat(self._path).content_length)

    def exists(self) -> bool:
        return bool(self._operator.exists(self._path))


class OpenDalInputFile(_OpenDalPath, InputFile):
    def open(self, seekable: bool = True) -> InputStream:
        if not self.exists():
            raise FileNotFoundError(f"Cannot open file, does not exist: {self.location}")
        return _FullReads(self._operator.open(self._path, "rb"))


class OpenDalOutputFile(_OpenDalPath, OutputFile):
    def to_input_file(self) -> InputFile:
        return OpenDalInputFile(self.location, self._operator, self._path)

    def create(self, overwrite: bool = False) -> OutputStream:
        if not overwrite and self.exists():
            raise FileExistsError(f"Cannot create file, already exists: {self.location}")
        return self._operator.open(self._path, "wb")


class _FullReads:
    """OpenDAL's reader as pyiceberg's InputStream, with whole reads. On S3 its `read(n)` returns
    what one fetched chunk holds (read(65536) gave 7,733 bytes 64 KiB before the end of a file),
    and pyarrow takes a short read for the end of the file ("Parquet magic bytes not found"): a read
    here goes on until it has `size` bytes or the file ends."""

    def __init__(self, file: opendal.File) -> None:
        self._file = file
        self.seek, self.tell, self.close = file.seek, file.tell, file.close

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return bytes(self._file.read())
        parts, missing = [], size
        while missing > 0 and (chunk := self._file.read(missing)):
            parts.append(bytes(chunk))
            missing -= len(chunk)
        return b"".join(parts)

    @property
    def closed(self) -> bool:
        return bool(self._file.closed)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def __enter__(self) -> _FullReads:
        return self

    def __exit__(self, *_: object) -> None:
        self._file.close()
