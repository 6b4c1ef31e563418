"""Writers support an operation by having its method: nothing else is taken for one, and the
base's write() is the one place that picks it."""

from enum import StrEnum

import pytest

from harness.engines.spark import SparkOptions
from harness.engines.worker import run
from harness.engines.writers import Operation, StepTimer, WriteJob, Writer, writers
from harness.engines.writers.base import UnsupportedOperation
from harness.engines.writers.ray_data import RayOptions
from harness.model import EngineOptions, WorkerSpec
from scenarios.upsert import Upsert


class AppendOnly(Writer):
    name = "append-only"
    description = "appends, nothing else"
    single_commit = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        timer.steps.append(0.0)  # proof that this method ran


class Extra(StrEnum):
    """Operation-like names no writer has a method for; some name other attributes of a writer."""

    MERGE = "merge"
    DESCRIPTION = "description"  # a class attribute
    SUPPORTS_CATALOG = "supports_catalog"  # a class method
    UNAVAILABLE = "unavailable"  # another
    VERSIONS = "versions"
    WRITE = "write"  # Writer's own dispatch
    INIT = "__init__"  # object's
    PRIVATE = "_private"


def job(operation: str) -> WriteJob:
    return WriteJob(table=None, source=None, operation=operation, key_columns=[])  # type: ignore[arg-type]


def test_a_writer_without_upsert_is_unsupported_for_upsert():
    assert AppendOnly.supports(Operation.APPEND)
    assert not AppendOnly.supports(Operation.UPSERT) and not AppendOnly.supports(Operation.REPLACE)
    assert Upsert().unsupported_reason(AppendOnly) == "append-only does not support upsert"
    with pytest.raises(UnsupportedOperation, match="append-only does not support upsert"):
        AppendOnly().write(job(Operation.UPSERT), StepTimer())


def test_write_dispatches_to_the_operations_method():
    timer = StepTimer()
    AppendOnly().write(job(Operation.APPEND), timer)
    assert timer.steps == [0.0]


@pytest.mark.parametrize("operation", list(Extra))
def test_an_operation_without_a_method_is_unsupported_not_dispatched_elsewhere(operation):
    class Private(AppendOnly):
        def _private(self, job: WriteJob, timer: StepTimer) -> None:
            raise AssertionError("a private helper is no operation")

    for writer in [AppendOnly, Private, *writers().values()]:
        assert not writer.supports(operation), (writer.name, operation)
    timer = StepTimer()
    with pytest.raises(UnsupportedOperation, match=f"append-only does not support {operation}$"):
        Private().write(job(operation), timer)
    assert timer.steps == []


def test_a_subclass_can_drop_an_inherited_operation():
    class NoAppend(AppendOnly):
        append = None

    assert not NoAppend.supports(Operation.APPEND)


def test_a_writer_cannot_dispatch_on_its_own():
    with pytest.raises(TypeError, match="define append/replace/upsert, not write"):

        class Dispatching(Writer):
            def write(self, job: WriteJob, timer: StepTimer) -> None:
                pass


def test_every_writer_supports_at_least_one_operation_or_says_why_it_cannot_write():
    for name, writer in writers().items():
        assert any(writer.supports(operation) for operation in Operation) or writer.unavailable(), name


@pytest.mark.parametrize(
    ("writer", "options", "error"),
    [
        ("pyiceberg-table", {"master": "local[2]"}, "unknown option master; it takes no options"),
        (
            "spark",
            {"mastr": "local[2]"},
            "unknown option mastr (did you mean master?); it takes master, executor_memory",
        ),
        ("spark", {"master": 7}, "option master: Input should be a valid string (got 7)"),
    ],
)
def test_a_bad_writer_option_is_one_line_naming_the_writer_and_option(tmp_path, writer, options, error):
    spec = WorkerSpec(
        catalog={}, table="t", writer=writer, operation=Operation.APPEND, key_columns=[], source_dir=tmp_path,
        batch_rows=10, started_marker=tmp_path / "started", result_path=tmp_path / "result.json",
        writer_options=options,
    )  # fmt: skip
    result = run(spec)
    assert (result.status, result.error) == ("error", f"writer {writer}: {error}")
    assert not spec.started_marker.exists()  # refused before anything started


def test_the_spark_and_ray_writers_take_their_engines_options_into_the_job():
    assert all(writers()[name].options is SparkOptions for name in ("spark", "spark-cow", "spark-mor"))
    assert all(writers()[name].options is RayOptions for name in ("ray-data", "daft-ray"))
    others = [w for name, w in writers().items() if not name.startswith(("spark", "ray-data", "daft-ray"))]
    assert all(w.options is EngineOptions for w in others)


def test_a_spark_failure_is_its_java_exception_in_one_line():
    from harness.engines.writers.spark import spark_failure

    py4j = Exception(
        "An error occurred while calling o65.sql.\n"
        ": org.apache.iceberg.exceptions.ValidationException: Found conflicting files that can contain "
        "records matching true: [data/a.parquet]\n\tat org.apache.iceberg.MergingSnapshotProducer.validate"
    )
    assert str(spark_failure(py4j)) == (
        "Spark: ValidationException: Found conflicting files that can contain records matching true: "
        "[data/a.parquet]"
    )
    nested = Exception("failed\nCaused by: java.io.IOException: outer\nCaused by: disk gone")
    assert str(spark_failure(nested)) == "Spark: disk gone"
