"""SparkSessions for icebench: on the run's catalog (the embedded stack's SQLite file through
Iceberg's JdbcCatalog, or a REST catalog with its S3 store through S3FileIO) for the Spark writers
and the Spark verifier, or catalog-less for generation.

`spark.jars` are Iceberg's Spark runtime, the AWS SDK bundle and SQLite's JDBC driver, fetched from
Maven Central by `make spark-jars` (compose/spark/fetch-jars.sh) into compose/spark/build/; other
Iceberg versions (`--iceberg-spark`) and Spark 4 (`--pyspark 4.0.1`) by the runner on first use.
pyspark is imported lazily: nothing else in icebench needs it.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import urlparse

from pydantic import Field, field_validator, model_validator

from harness.base.caps import ByteSize
from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError
from harness.base.executor_caps import EXECUTOR_CAP_VARIABLE, EXECUTOR_CGROUPS_VARIABLE
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE
from harness.engines.choices import (
    DEFAULT_MASTER,
    SPARK_CLUSTER_VARIABLE,
    check_spark_master,
    standalone_workers,
)
from harness.model import EngineOptions, ExecutorFigures
from harness.services.stacks.base import CATALOG_TOKEN_VARIABLE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_CATALOG = "icebench"  # also the catalog_name pyiceberg writes in the SQLite file
JARS_ROOT = REPO_ROOT / "compose" / "spark" / "build"
FETCH_JARS = REPO_ROOT / "compose" / "spark" / "fetch-jars.sh"
DEFAULT_ICEBERG_SPARK = "1.10.1"  # compose/spark/fetch-jars.sh DEFAULT_ICEBERG
# The Iceberg runtime of a worker other than the default: `--iceberg-spark` (the runner sets it).
ICEBERG_SPARK_VARIABLE = "ICEBENCH_ICEBERG_SPARK"
# pyspark's minor version: the Spark line Iceberg builds its runtime for (Spark 4 is Scala 2.13 only).
SPARK_LINES = {"3.5": "3.5_2.12", "4.0": "4.0_2.13", "4.1": "4.1_2.13"}
# The Iceberg runtime a line runs on unless --iceberg-spark says otherwise: Spark 4.1's runtime begins
# at Iceberg 1.11.0 (Maven Central, 2026-11); the newest release is taken.
LINE_ICEBERG_SPARK = {"4.1_2.13": "1.12.0"}
SQLITE_JDBC = "sqlite-jdbc-3.50.3.0.jar"  # compose/spark/fetch-jars.sh SQLITE_JDBC
FETCH_TIMEOUT_S = 900.0
MIN_HEAP = 512 * 2**20
HEAP_SHARE = 0.6  # of the cap; the rest is JVM off-heap (metaspace, code, threads) and the python worker


class SparkUnsupported(IcebenchError):
    """The run's catalog or storage is one these jars cannot talk to."""


def spark_supports(catalog_properties: dict[str, str]) -> str | None:
    """None when a Spark writer can work on this catalog, else the reason it cannot."""
    kind = catalog_properties.get("type", "")
    if kind == "rest":
        return None
    if kind != "sql" or not catalog_properties.get("uri", "").startswith("sqlite:///"):
        return f"Spark runs on a REST catalog or the embedded SQLite file, not a {kind or '?'} catalog"
    if not (warehouse := catalog_properties.get("warehouse", "")).startswith("file:"):
        return f"Spark on the SQLite catalog needs its local warehouse, not {warehouse!r}"
    return None


def quoted(*parts: str) -> str:
    """A Spark SQL identifier, each part back-quoted."""
    return ".".join(f"`{part.replace('`', '``')}`" for part in parts)


def iceberg_spark_version() -> str:
    return os.environ.get(ICEBERG_SPARK_VARIABLE) or line_iceberg_spark(spark_line())


def line_iceberg_spark(line: str) -> str:
    """The Iceberg runtime a Spark line runs on by default."""
    return LINE_ICEBERG_SPARK.get(line, DEFAULT_ICEBERG_SPARK)


def spark_line(pyspark_version: str | None = None) -> str:
    """`3.5_2.12` for pyspark 3.5.x (this environment's when not given): the suffix of Iceberg's
    runtime artifact for that Spark."""
    if pyspark_version is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            pyspark_version = version("pyspark")
        except PackageNotFoundError:
            raise IcebenchError("pyspark is not installed in this environment") from None
    minor = ".".join(pyspark_version.split(".")[:2])
    if minor not in SPARK_LINES:
        known = ", ".join(SPARK_LINES)
        raise IcebenchError(f"pyspark {pyspark_version}: Iceberg's Spark runtimes here are for Spark {known}")
    return SPARK_LINES[minor]


def jars(iceberg: str | None = None, line: str | None = None) -> list[Path]:
    """Iceberg's Spark runtime, the AWS SDK bundle and SQLite's JDBC driver, as fetch-jars.sh lays
    them out; by default for this worker's Iceberg version and pyspark."""
    iceberg, line = iceberg or iceberg_spark_version(), line or spark_line()
    folder = JARS_ROOT / f"spark-{line}" / f"iceberg-{iceberg}"
    return [
        folder / f"iceberg-spark-runtime-{line}-{iceberg}.jar",
        folder / f"iceberg-aws-bundle-{iceberg}.jar",
        folder / SQLITE_JDBC,
    ]


def missing_jars() -> list[Path]:
    return [jar for jar in jars() if not jar.is_file()]


def check_jars() -> list[Path]:
    missing = missing_jars()
    if missing:
        pinned = (iceberg_spark_version(), spark_line()) == (DEFAULT_ICEBERG_SPARK, SPARK_LINES["3.5"])
        fetch = "make spark-jars" if pinned else f"compose/spark/{FETCH_JARS.name}"
        raise IcebenchError(f"Spark jar {missing[0]} is missing; run {fetch}")
    return jars()


def fetch_jars(iceberg: str, line: str) -> None:
    """Fetches (once: then cached) the jars of one Iceberg version for one Spark line from Maven
    Central; a failure is one line naming what could not be fetched."""
    if (jars(iceberg, line)[0].parent / ".complete").is_file():
        return
    done = subprocess.run(
        [str(FETCH_JARS), iceberg], env={**os.environ, "SPARK_LINE": line},
        capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise IcebenchError(f"cannot fetch Iceberg {iceberg}'s Spark {line} runtime: {last}")


FETCH_S3A_JARS = REPO_ROOT / "compose" / "spark" / "fetch-s3a-jars.sh"


def pyspark_hadoop_version() -> str:
    """The Hadoop release inside the installed pyspark (its hadoop-client-api jar): hadoop-aws must
    be that release."""
    import pyspark

    found = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not found:
        raise IcebenchError(f"pyspark {pyspark.__version__} ships no hadoop-client-api jar: no S3A for it")
    return found[-1].stem.removeprefix("hadoop-client-api-")


def s3a_jars() -> list[Path]:
    """hadoop-aws and its AWS SDK bundle, as fetch-s3a-jars.sh lays them out (none: not fetched)."""
    folder = JARS_ROOT / f"s3a-{pyspark_hadoop_version()}"
    return sorted(folder.glob("*.jar")) if (folder / ".complete").is_file() else []


def fetch_s3a_jars() -> None:
    """Fetches (once: then cached) what Spark reads a source set on S3 with."""
    if s3a_jars():
        return
    hadoop = pyspark_hadoop_version()
    done = subprocess.run(
        [str(FETCH_S3A_JARS), hadoop], capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise IcebenchError(f"cannot fetch hadoop-aws {hadoop} for Spark's S3A: {last}")


def s3a_conf() -> dict[str, str]:
    """Spark's S3A reading a source set on the stack's object store: its endpoint from the
    environment, the key pair from the environment too (S3A's default chain reads AWS_ACCESS_KEY_ID
    and AWS_SECRET_ACCESS_KEY; the executors of a cluster icebench starts inherit them), never in a
    setting."""
    endpoint = os.environ.get(SOURCES_ENDPOINT_VARIABLE)
    if endpoint is None:
        raise IcebenchError("a source set on S3 with no S3 endpoint in the environment (no stack serves it)")
    jars = s3a_jars()
    if not jars:
        raise IcebenchError(
            f"Spark's S3A jars are missing: run compose/spark/{FETCH_S3A_JARS.name} "
            f"{pyspark_hadoop_version()}"
        )
    conf = {
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION", "us-east-1"),
        "s3a-jars": ",".join(str(jar) for jar in jars),
    }
    if endpoint:  # "": AWS's own
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https")).lower()
    return conf


def s3a_uri(path: str) -> str:
    """A set's file as Spark's S3A names it."""
    return "s3a://" + path.removeprefix("s3://") if path.startswith("s3://") else path


def sqlite_path(catalog_properties: dict[str, str]) -> str:
    """`sqlite:///ABS/PATH` (SQLAlchemy) -> `/ABS/PATH`."""
    return catalog_properties["uri"].removeprefix("sqlite://")


def catalog_conf(catalog_properties: dict[str, str]) -> dict[str, str]:
    """Spark catalog `icebench` on the run's catalog."""
    if catalog_properties.get("type") == "rest":
        return rest_catalog_conf(catalog_properties)
    return sqlite_catalog_conf(catalog_properties)


# pyiceberg's FileIO properties Iceberg Java's S3FileIO reads under other names.
S3_PROPERTIES = {
    "s3.endpoint": "s3.endpoint",
    "s3.path-style-access": "s3.path-style-access",
    "s3.region": "client.region",
}


def rest_catalog_conf(catalog_properties: dict[str, str]) -> dict[str, str]:
    """A REST catalog, its tables' files through S3FileIO. The S3 keys reach the AWS SDK from the
    AWS_* environment and the bearer token from the one pyiceberg reads (never a spec file); Spark
    redacts conf values whose key says token."""
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": catalog_properties["uri"],
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.cache-enabled": "false",  # see pyiceberg's commits between Spark's statements
    }
    if warehouse := catalog_properties.get("warehouse"):
        conf[f"{prefix}.warehouse"] = warehouse
    conf |= {
        f"{prefix}.{java}": value
        for py, java in S3_PROPERTIES.items()
        if (value := catalog_properties.get(py))
    }
    # A catalog that wants its requests signed with SigV4 (rest.sigv4-enabled, rest.signing-name, ...).
    conf |= {
        f"{prefix}.{name}": value for name, value in catalog_properties.items() if name.startswith("rest.")
    }
    if token := os.environ.get(CATALOG_TOKEN_VARIABLE) or catalog_properties.get("token"):
        conf[f"{prefix}.token"] = token
    return conf


def sqlite_catalog_conf(catalog_properties: dict[str, str]) -> dict[str, str]:
    """Iceberg's JdbcCatalog sharing pyiceberg's SqlCatalog file."""
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"{prefix}.uri": f"jdbc:sqlite:{sqlite_path(catalog_properties)}",
        f"{prefix}.warehouse": catalog_properties["warehouse"],
        # pyiceberg created the catalog tables; initialising them again keeps a read lock open
        # and every later pyiceberg commit fails "database is locked".
        f"{prefix}.jdbc.init-catalog-tables": "false",
        # pyiceberg 0.12 creates the V1 tables (with iceberg_type) itself: V1 reads and writes them
        # as they are (no ALTER) and marks tables Spark creates 'TABLE', as pyiceberg does.
        f"{prefix}.jdbc.schema-version": "V1",
        # Else Spark keeps serving the table as it first loaded it, blind to pyiceberg's commits.
        f"{prefix}.cache-enabled": "false",
    }


def heap_bytes(cap_bytes: int | None) -> int:
    if cap_bytes is None:
        return 2 * 2**30
    return max(MIN_HEAP, int(cap_bytes * HEAP_SHARE))


# Under RLIMIT_AS (virtual memory) the JVM's default reservations alone exceed a 2 GiB cap
# (1 GiB compressed class space, 240 MiB code cache, 64 MiB malloc arenas per thread).
RLIMIT_JAVA_OPTIONS = (
    "-XX:CompressedClassSpaceSize=128m -XX:ReservedCodeCacheSize=96m -XX:MaxMetaspaceSize=384m "
    "-XX:+UseSerialGC -Xss1m"
)


def _under_rlimit_as() -> bool:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return soft != resource.RLIM_INFINITY


class SparkOptions(EngineOptions):
    """`[engines.spark]` of the config file (also `--spark-master`, ICEBENCH_SPARK_MASTER)."""

    engine: ClassVar[str | None] = "spark"
    master: str = Field(
        DEFAULT_MASTER,
        description="local[*], a cluster such as spark://host:7077, or standalone[N]: N workers icebench "
        "starts on loopback, each executor under the run's cap",
    )

    executor_memory: ByteSize | None = Field(
        None, description="standalone[N]: each executor's cap (default: the run's --memory, as the driver's)"
    )

    _master = field_validator("master")(check_spark_master)

    @model_validator(mode="after")
    def _executor_memory_with_its_cluster(self) -> SparkOptions:
        if self.executor_memory is not None and standalone_workers(self.master) is None:
            raise ValueError(
                f"executor_memory caps the executors of standalone[N] only, and master is {self.master}"
            )
        return self


def resolved_master(master: str) -> str:
    """The URL a driver connects to: `standalone[N]`'s is the cluster the workload started."""
    if standalone_workers(master) is None:
        return master
    if not (url := os.environ.get(SPARK_CLUSTER_VARIABLE)):
        raise IcebenchError(
            f"Spark master {master}: no cluster was started for this process (run, matrix and rounds "
            "start it around their workload)"
        )
    return url


def cluster_conf(master: str) -> dict[str, str]:
    """On a cluster: executors capped where the run asked (the cgroups and cap it passes down, the
    heap within the cap as the driver's), and their memory metrics kept for executor_figures."""
    if master.startswith("local"):
        return {}
    conf = {
        "spark.ui.enabled": "true",  # the REST API executor_figures reads
        "spark.ui.port": "0",
        "spark.executor.processTreeMetrics.enabled": "true",  # the process tree's rss, not only the heap
        "spark.executor.metrics.pollingInterval": "1s",
    }
    if cap := os.environ.get(EXECUTOR_CAP_VARIABLE):
        conf |= {
            "spark.executor.memory": f"{heap_bytes(int(cap)) // 2**20}m",
            **{
                f"spark.executorEnv.{name}": os.environ[name]
                for name in (EXECUTOR_CGROUPS_VARIABLE, EXECUTOR_CAP_VARIABLE)
            },
        }
    return conf


def session_conf(
    catalog_properties: dict[str, str] | None,
    cap_bytes: int | None,
    master: str = DEFAULT_MASTER,
    source_on_s3: bool = False,
) -> dict[str, str]:
    """Spark settings for a driver inside the worker's cap; with the run's Iceberg catalog when
    given, and S3A when the source set is on S3."""
    scratch = Path(tempfile.gettempdir()) / f"icebench-spark-{os.getpid()}"
    extra = {"spark.driver.extraJavaOptions": RLIMIT_JAVA_OPTIONS} if _under_rlimit_as() else {}
    jars = [str(jar) for jar in check_jars()] if catalog_properties is not None else []
    if source_on_s3:
        extra |= s3a_conf()
        jars += extra.pop("s3a-jars").split(",")
    if jars:
        extra["spark.jars"] = ",".join(jars)
    if catalog_properties is not None:
        extra |= {
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            **catalog_conf(catalog_properties),
        }
    master = resolved_master(master)
    return {
        **extra,
        "spark.master": master,
        "spark.app.name": "icebench",
        "spark.driver.memory": f"{heap_bytes(cap_bytes) // 2**20}m",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        "spark.local.dir": str(scratch / "local"),
        # Wide tables: dictionary encoding made Spark's parquet writes ~5x slower (FIELD-NOTES).
        "spark.hadoop.parquet.enable.dictionary": "false",
        "spark.sql.parquet.enableVectorizedReader": "true",
        # Spark 3.5 still writes INT96 by default; Iceberg and pyarrow expect int64 micros.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        **cluster_conf(master),
    }


def executor_figures(session: SparkSession) -> list[ExecutorFigures]:
    """A cluster's executors as Spark's own REST API gives them (the driver's
    /applications/{id}/allexecutors): each one's peak process-tree rss and heap, as it last reported
    them; none on `local[*]`, where the driver is the executor and its cap measures it."""
    import urllib.request

    context = session.sparkContext
    if context.master.startswith("local") or not (ui := context.uiWebUrl):
        return []
    url = f"{ui}/api/v1/applications/{context.applicationId}/allexecutors"
    with urllib.request.urlopen(url, timeout=10) as response:
        summaries = json.load(response)
    figures = []
    for summary in summaries:
        if summary.get("id") == "driver":
            continue
        peaks = summary.get("peakMemoryMetrics") or {}
        tree = sum(peaks.get(f"ProcessTree{kind}RSSMemory", 0) for kind in ("JVM", "Python", "Other"))
        figures.append(
            ExecutorFigures(
                name=f"executor {summary['id']}",
                host=summary.get("hostPort"),
                source="spark-rest-api",
                peak_rss_bytes=tree or None,
                peak_heap_bytes=peaks.get("JVMHeapMemory"),
            )
        )
    return figures


def _on_this_machine(master: str) -> bool:
    return master.startswith("local") or urlparse(master).hostname in ("127.0.0.1", "localhost")


def spark_session(
    catalog_properties: dict[str, str] | None,
    cap_bytes: int | None,
    master: str = DEFAULT_MASTER,
    source_on_s3: bool = False,
) -> SparkSession:
    """A fresh SparkSession whose driver JVM is a child of this process, on the run's catalog if given.

    `master` is `local[*]` or a cluster URL (`spark://host:7077`); on a cluster the executors run
    outside this process's memory cap and need the warehouse and source paths at the same place.
    """
    if catalog_properties is not None and (reason := spark_supports(catalog_properties)):
        raise SparkUnsupported(reason)
    conf = session_conf(catalog_properties, cap_bytes, master, source_on_s3)
    master = conf["spark.master"]
    atexit.register(shutil.rmtree, Path(conf["spark.local.dir"]).parent, ignore_errors=True)
    if _under_rlimit_as():
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")  # inherited by the JVM pyspark starts
    # Python tasks (mapInArrow) run this interpreter, which has pyarrow, numpy and icebench;
    # pyspark reads only the environment variable, not spark.pyspark.python.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if _on_this_machine(master):  # nothing outside this machine needs to reach the driver
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if catalog_properties is not None:  # Iceberg's jars are on the class path
        check_loaded_runtime(session)
    return session


def check_loaded_runtime(session: SparkSession) -> None:
    """The record names the Iceberg runtime this worker asked for (iceberg_spark_version): the JVM
    must have loaded that one, not another jar on its class path."""
    loaded = str(session._jvm.org.apache.iceberg.IcebergBuild.version())  # type: ignore[attr-defined]
    if loaded != (asked := iceberg_spark_version()):
        raise IcebenchError(f"the Spark JVM loaded Iceberg {loaded}, not the runtime {asked} it was given")
