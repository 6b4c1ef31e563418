"""time_: the generator's throughput (pytest-benchmark; compare runs with --benchmark-compare)."""

from generators.wide import generate_base

ROWS, COLUMNS, FILES = 100_000, 100, 2


def test_time_generate_100k_rows_x_100_columns(benchmark, tmp_path):
    manifest = benchmark.pedantic(
        generate_base,
        args=(tmp_path / "set",),
        kwargs={"rows": ROWS, "columns": COLUMNS, "files": FILES, "seed": 42},
        rounds=3,
        iterations=1,
    )
    benchmark.extra_info["rows_per_s"] = round(ROWS / benchmark.stats.stats.median)
    assert manifest.rows == ROWS
