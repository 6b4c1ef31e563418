"""The `write.*` table properties a run may set (`--table-property`), and what each takes: a name
Iceberg does not know, or a value its writers would refuse mid-run, is one line before any run.

Iceberg stores any property it is given; a misspelt one changes nothing, silently. The names are
those of Iceberg's TableProperties (Java, docs/configuration) and pyiceberg's own (`write.parquet.
row-group-limit`, `write.py-location-provider.impl`); a `...column.<name>` one is per column.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.base.errors import IcebenchError, close_match

_CODECS = ("zstd", "gzip", "snappy", "lz4", "brotli", "uncompressed", "none")
_MODES = ("copy-on-write", "merge-on-read")
_ISOLATION = ("serializable", "snapshot")
_DISTRIBUTION = ("none", "hash", "range")
_BOOLEANS = ("true", "false")


def _positive(value: str) -> str | None:
    return None if value.isdigit() and int(value) > 0 else "a whole number above 0"


def _count(value: str) -> str | None:
    return None if value.isdigit() else "a whole number"


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    return lambda value: None if value.lower() in choices else f"one of {', '.join(choices)}"


def _anything(value: str) -> str | None:
    return None


WRITE_PROPERTIES: dict[str, Callable[[str], str | None]] = {
    "write.format.default": _one_of(("parquet", "avro", "orc")),
    "write.delete.format.default": _one_of(("parquet", "avro", "orc")),
    "write.target-file-size-bytes": _positive,
    "write.delete.target-file-size-bytes": _positive,
    "write.parquet.row-group-size-bytes": _positive,
    "write.parquet.row-group-limit": _positive,
    "write.parquet.page-size-bytes": _positive,
    "write.parquet.page-row-limit": _positive,
    "write.parquet.dict-size-bytes": _positive,
    "write.parquet.compression-codec": _one_of(_CODECS),
    "write.parquet.compression-level": _count,
    "write.parquet.bloom-filter-max-bytes": _positive,
    "write.avro.compression-codec": _one_of(_CODECS),
    "write.avro.compression-level": _count,
    "write.orc.compression-codec": _one_of(_CODECS),
    "write.distribution-mode": _one_of(_DISTRIBUTION),
    "write.delete.distribution-mode": _one_of(_DISTRIBUTION),
    "write.update.distribution-mode": _one_of(_DISTRIBUTION),
    "write.merge.distribution-mode": _one_of(_DISTRIBUTION),
    "write.delete.mode": _one_of(_MODES),
    "write.update.mode": _one_of(_MODES),
    "write.merge.mode": _one_of(_MODES),
    "write.delete.isolation-level": _one_of(_ISOLATION),
    "write.update.isolation-level": _one_of(_ISOLATION),
    "write.merge.isolation-level": _one_of(_ISOLATION),
    "write.metadata.metrics.default": _anything,  # none, counts, truncate(16), full
    "write.metadata.metrics.max-inferred-column-defaults": _count,
    "write.metadata.compression-codec": _one_of(("none", "gzip")),
    "write.metadata.delete-after-commit.enabled": _one_of(_BOOLEANS),
    "write.metadata.previous-versions-max": _positive,
    "write.metadata.path": _anything,
    "write.data.path": _anything,
    "write.object-storage.enabled": _one_of(_BOOLEANS),
    "write.object-storage.partitioned-paths": _one_of(_BOOLEANS),
    "write.location-provider.impl": _anything,
    "write.py-location-provider.impl": _anything,
    "write.summary.partition-limit": _count,
    "write.spark.fanout.enabled": _one_of(_BOOLEANS),
    "write.spark.accept-any-schema": _one_of(_BOOLEANS),
    "write.wap.enabled": _one_of(_BOOLEANS),
    "write.upsert.enabled": _one_of(_BOOLEANS),
}
# Per column: `<prefix><column>`.
COLUMN_PROPERTIES: dict[str, Callable[[str], str | None]] = {
    "write.metadata.metrics.column.": _anything,
    "write.parquet.bloom-filter-enabled.column.": _one_of(_BOOLEANS),
    "write.parquet.bloom-filter-fpp.column.": _anything,
    "write.parquet.stats-enabled.column.": _one_of(_BOOLEANS),
}


def check_write_property(text: str, key: str, value: str) -> None:
    """A one-line error for a `write.*` property Iceberg does not know (with the nearest known
    name) or a value its writers would refuse; others (`commit.*`, `read.*`...) pass as given."""
    if not key.startswith("write."):
        return
    check = WRITE_PROPERTIES.get(key) or next(
        (check for prefix, check in COLUMN_PROPERTIES.items() if key.startswith(prefix) and key != prefix),
        None,
    )
    if check is None:
        known = [*WRITE_PROPERTIES, *COLUMN_PROPERTIES]
        raise IcebenchError(
            f"--table-property {text}: {key} is no Iceberg write property{close_match(key, known)}"
        )
    if (wanted := check(value)) is not None:
        raise IcebenchError(f"--table-property {text}: {key} takes {wanted}")
