"""What the engines' flags take, light for the CLI to check before it loads an engine: Spark's
master URLs (`--spark-master`) and pyiceberg's FileIOs (`--fileio`, harness/engines/fileio.py)."""

from __future__ import annotations

import re

from harness.base.errors import IcebenchError, close_match

DEFAULT_MASTER = "local[*]"


# What spark.master takes: local, local[N], local[*], local[N,F], a cluster URL, yarn.
_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|(spark|k8s|mesos)://\S+|yarn")
# Ours: a standalone cluster of N workers icebench starts on loopback for the workload, each
# executor under the run's cap (harness/services/spark_cluster.py).
_STANDALONE = re.compile(r"standalone\[([1-8])\]")
# The started cluster's URL, for the drivers of that workload.
SPARK_CLUSTER_VARIABLE = "ICEBENCH_SPARK_CLUSTER"


def check_spark_master(text: str) -> str:
    if not (_MASTER.fullmatch(text) or _STANDALONE.fullmatch(text)):
        raise ValueError(
            f"not a Spark master: {text!r} (local[*], local[N], spark://host:port, yarn, k8s://..., "
            "or standalone[N]: a cluster of N workers, 1 to 8, icebench starts)"
        )
    return text


def standalone_workers(master: str) -> int | None:
    """N of `standalone[N]`; None for any other master."""
    match = _STANDALONE.fullmatch(master)
    return int(match.group(1)) if match else None


# name -> (pyiceberg's py-io-impl, the distribution that does the IO)
FILE_IOS = {
    "pyarrow": ("pyiceberg.io.pyarrow.PyArrowFileIO", "pyarrow"),
    "fsspec": ("pyiceberg.io.fsspec.FsspecFileIO", "s3fs"),
    "opendal": ("harness.engines.fileio.OpenDalFileIO", "opendal"),
}


def file_io_impl(name: str) -> str:
    """pyiceberg's `py-io-impl` for `name`, or a one-line error naming the choices."""
    if name not in FILE_IOS:
        raise IcebenchError(
            f"unknown FileIO {name!r}{close_match(name, FILE_IOS)}; choose from {', '.join(FILE_IOS)}"
        )
    return FILE_IOS[name][0]
