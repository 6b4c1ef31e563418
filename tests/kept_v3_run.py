"""A tiny run into a v3 table on the embedded stack, its warehouse kept for the damage tests."""

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from harness.base.layout_text import parse_layout
from harness.base.results import ResultsStore
from harness.model import RunRecord
from harness.run.runner import Runner, RunPlan
from harness.services.stacks.embedded import EmbeddedStack


def kept_v3_run(settings, tiny_sets, scenario: str, writer: str) -> tuple[RunRecord, Table]:
    """`writer`'s `scenario` of tiny (5,000-row batches, 2 GiB) into a v3 table, and that table."""
    kept = settings.model_copy(update={"keep_warehouse": True})
    store = ResultsStore(kept.results_dir)
    v3 = parse_layout("", "", ["format-version=3"])
    record = Runner(kept, store, EmbeddedStack(kept)).run(
        RunPlan(scenario, writer, "tiny", tiny_sets, 5000, 2 * 2**30, layout=v3)
    )
    (catalog_file,) = store.folder.glob("work/*/warehouse/catalog.db")
    warehouse = catalog_file.parent
    catalog = SqlCatalog("icebench", uri=f"sqlite:///{catalog_file}", warehouse=f"file://{warehouse}")
    return record, catalog.load_table(f"bench.{scenario}")
