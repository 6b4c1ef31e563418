"""Spark's versions as a variant axis: Iceberg's Spark runtime (`--iceberg-spark 1.9.2,1.10.1`, a
jar from Maven Central) and Spark itself (`--pyspark 4.0.1`: its Scala 2.13 runtime), each fetched
on first use, their runs labelled side by side."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.errors import IcebenchError
from harness.base.results import read_runs
from harness.cli.main import main
from harness.engines.spark import DEFAULT_ICEBERG_SPARK, JARS_ROOT, missing_jars, spark_line
from reports.baseline import newest_results_folder

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.usefixtures("cli_settings"),
    pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars"),
]


def _runs(settings) -> dict[tuple[str, str | None], object]:
    return {(r.writer, r.variant): r for r in read_runs(newest_results_folder(settings.results_dir))}


def test_iceberg_spark_runtimes_side_by_side(settings, tiny_sets):
    code = main(
        ["matrix", "--scenarios", "upsert", "--writers", "spark,pyiceberg-table", "--preset", "tiny",
         "--memory", "2g", "--iceberg-spark", "1.9.2,1.10.1"]
    )  # fmt: skip
    assert code == 0
    runs = _runs(settings)
    for version in ("1.9.2", "1.10.1"):
        spark = runs["spark", f"iceberg-spark {version}"]
        assert spark.status == "ok" and spark.verdict.passed
        assert spark.versions["iceberg-spark-runtime"] == version  # what the worker's JVM loaded
        # A writer the runtime does not touch would only repeat itself: refused, with why.
        untouched = runs["pyiceberg-table", f"iceberg-spark {version}"]
        assert untouched.status == "unsupported"
        assert untouched.error == (
            "pyiceberg-table does not use iceberg-spark: --iceberg-spark changes nothing it runs"
        )


def test_spark_4_1_runs_on_its_own_iceberg_runtime(settings, tiny_sets):
    """The newest Spark line on the newest Iceberg built for it (its runtime begins at 1.11.0)."""
    code = main(
        ["run", "--scenario", "upsert", "--writer", "spark", "--preset", "tiny", "--memory", "2g",
         "--pyspark", "4.1.4"]
    )  # fmt: skip
    assert code == 0
    record = _runs(settings)["spark", "pyspark 4.1.4"]
    assert record.status == "ok" and record.verdict.passed
    assert record.versions["pyspark"] == "4.1.4"
    assert record.versions["iceberg-spark-runtime"] == "1.12.0"  # what the worker's JVM loaded
    assert (JARS_ROOT / "spark-4.1_2.13" / "iceberg-1.12.0" / ".complete").is_file()


def test_a_runtime_other_than_the_one_named_is_refused(tmp_path):
    # A JVM of its own: a pytest process may hold one already started without Iceberg's jars
    # (spark.jars given to a running JVM never reach the driver's class loader).
    script = f"""
import os
from harness.base.errors import IcebenchError
from harness.engines.spark import ICEBERG_SPARK_VARIABLE, check_loaded_runtime, spark_session
catalog = {{"type": "sql", "uri": "sqlite:///{tmp_path}/catalog.db", "warehouse": "file://{tmp_path}"}}
session = spark_session(catalog, None)
os.environ[ICEBERG_SPARK_VARIABLE] = "9.9.9"  # the label would say 9.9.9
try:
    check_loaded_runtime(session)
except IcebenchError as refusal:
    print(refusal)
finally:
    session.stop()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = f"the Spark JVM loaded Iceberg {DEFAULT_ICEBERG_SPARK}, not the runtime 9.9.9 it was given"
    assert done.stdout.strip().splitlines()[-1] == loaded


def test_an_iceberg_release_maven_central_lacks_is_one_line_before_any_run(capsys, tiny_sets):
    code = main(["run", "--scenario", "append", "--writer", "spark", "--iceberg-spark=0.0.1"])
    assert code == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "cannot fetch Iceberg 0.0.1's Spark 3.5_2.12 runtime: " in err
    assert "iceberg-spark-runtime-3.5_2.12:0.0.1" in err


def test_a_spark_without_an_iceberg_runtime_here_is_refused_before_installing_it(capsys, tiny_sets):
    refusal = "pyspark 3.3.2: Iceberg's Spark runtimes here are for Spark 3.5, 4.0, 4.1"
    assert spark_line("3.5.9") == "3.5_2.12" and spark_line("4.1.4") == "4.1_2.13"
    with pytest.raises(IcebenchError, match=f"^{re.escape(refusal)}$"):
        spark_line("3.3.2")
    code = main(["run", "--scenario", "append", "--writer", "spark", "--pyspark=3.3.2"])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith(refusal)
