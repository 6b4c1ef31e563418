"""For engines that read the source files themselves (polars, daft): their read failures as the
SourceError any writer gives, naming the file.

Their own messages name no file (polars 2.1: `parquet: File out of specification: Invalid thrift:
protocol error`; daft 0.6: `DaftError::ArrowError External format error: ...`), so after such a
failure the source is read once more, file by file, and the first file that cannot be read is
the culprit. That costs a read of the source, paid only by a write that already failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from generators.source import ParquetSource
from harness.base.errors import SourceError

# What an engine says when a parquet file would not decode; anything else is no source failure.
READ_FAILURE = re.compile(r"parquet|thrift|out of specification|arrowerror", re.IGNORECASE)


@contextmanager
def scanned(source: ParquetSource) -> Iterator[None]:
    """A read failure inside the block is the SourceError of the file that cannot be read, when
    one cannot; any other failure (or a file only the engine could not read) stays as it was."""
    try:
        yield
    except SourceError:
        raise
    except Exception as exc:
        if READ_FAILURE.search(str(exc)) and (unreadable := _unreadable_file(source)) is not None:
            raise unreadable from exc
        raise


def _unreadable_file(source: ParquetSource) -> SourceError | None:
    """The SourceError of the first source file pyarrow cannot read through, or None."""
    try:
        for _ in source.batches():
            pass
    except SourceError as exc:
        return exc
    return None
