"""Verifiers are plug-ins like writers: a module in harness/engines/verifiers is found by name, an unknown
name is one line with the choices, and the oracle's `engines_agree` check works with any of them."""

import sys

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from generators.checksum import Checksum
from harness.base.errors import IcebenchError
from harness.base.registry import discover
from harness.cli.main import main
from harness.engines.spark import SparkOptions
from harness.engines.verifiers import (
    PRIMARY,
    Verifier,
    VerifierFailed,
    get_verifier,
    verifier_names,
    verifiers,
)
from harness.engines.verifiers.spark import SparkVerifier
from harness.judge.oracle import capture_state, judge
from harness.model import EngineOptions
from scenarios import get_scenario
from scenarios.base import expect_set, register_set


def test_the_spark_verifier_is_found_by_name_and_pyiceberg_is_the_oracles_own_read():
    assert verifiers()["spark"] is SparkVerifier
    spark = get_verifier("spark")
    assert isinstance(spark, SparkVerifier) and spark.options is SparkOptions
    assert get_verifier(PRIMARY) is None and PRIMARY not in verifiers()
    assert verifier_names() == ["pyiceberg", *verifiers()]


def test_an_unknown_verifier_is_one_line_with_the_nearest_and_the_choices():
    with pytest.raises(IcebenchError) as raised:
        get_verifier("sprak")
    choices = ", ".join(verifier_names())
    assert str(raised.value) == f"unknown verifier 'sprak' (did you mean spark?); choose from {choices}"
    with pytest.raises(IcebenchError) as raised:
        get_verifier("trino")
    assert str(raised.value) == f"unknown verifier 'trino'; choose from {choices}"  # nothing near


def test_an_unknown_verifier_in_the_environment_fails_the_command_before_any_work(capsys, monkeypatch):
    monkeypatch.setenv("ICEBENCH_VERIFY_WITH", "sprak")
    assert main(["run", "--scenario", "append", "--writer", "pyiceberg-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("icebench: error: unknown verifier 'sprak' (did you mean spark?); choose from ")


class EchoOptions(EngineOptions):
    engine = "echo"
    rows_off: int = 0


def test_a_new_verifier_module_is_a_plug_in(tmp_path, monkeypatch):
    """One module with a Verifier subclass in the package: discovery finds it by its name."""
    package = tmp_path / "more_verifiers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "echo.py").write_text(
        "from generators.checksum import Checksum\n"
        "from harness.engines.verifiers.base import Verifier\n\n"
        "class EchoVerifier(Verifier):\n"
        "    name = 'echo'\n"
        "    description = 'reads nothing'\n\n"
        "    def read(self, catalog_properties, table_identifier, options):\n"
        "        return Checksum()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import more_verifiers

    found = discover(more_verifiers, Verifier)
    assert list(found) == ["echo"] and found["echo"].__module__ == "more_verifiers.echo"
    for name in [n for n in sys.modules if n.startswith("more_verifiers")]:
        monkeypatch.delitem(sys.modules, name)


class Echo(Verifier):
    """Reads what pyiceberg read (a test's double), `rows_off` rows fewer; fails when told to."""

    name = "echo"
    description = "the oracle's own numbers"
    options = EchoOptions

    def __init__(self, content: Checksum | None) -> None:
        self.content = content

    def read(
        self, catalog_properties: dict[str, str], table_identifier: str, options: EchoOptions
    ) -> Checksum:
        if self.content is None:
            raise VerifierFailed(f"echo could not read {table_identifier}: gone")
        return Checksum(rows=self.content.rows - options.rows_off, lanes=self.content.lanes)


def test_any_verifier_gives_the_engines_agree_check(tiny_sets, tmp_path):
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("append")()
    table = scenario.prepare(catalog, "bench", tiny_sets)
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    manifest = tiny_sets["base"].manifest

    def engines_agree(verifier: Verifier, options: EngineOptions | None = None):
        verdict, _ = judge(
            table.refresh(),
            expected=expect_set(tiny_sets["base"]),
            error=None,
            before=before,
            single_commit=True,
            verifier=verifier,
            verifier_options=options,
        )
        return next(check for check in verdict.checks if check.name == "engines_agree")

    content = Checksum.from_hex(manifest.checksum, manifest.rows)
    agree = engines_agree(Echo(content))
    assert agree.passed and agree.actual == {"engine": "echo", "rows": manifest.rows, "checksum": content.hex}
    assert agree.expected["engine"] == "pyiceberg"

    disagree = engines_agree(Echo(content), EchoOptions(rows_off=1))
    assert not disagree.passed and f"echo reads {manifest.rows - 1} rows" in disagree.reason

    failed = engines_agree(Echo(None))
    assert not failed.passed
    assert failed.reason == f"pyiceberg read {manifest.rows} rows, but echo could not read bench.append: gone"
