"""An OOM kill under the cap is a result, and the next run goes on."""

import pytest

from harness.base.caps import cgroup_parent
from harness.run.matrix import prepare_data
from harness.run.runner import RunPlan

CAP = 450 * 2**20  # above what a streaming writer needs on `small`, below a whole-table materialisation


@pytest.mark.skipif(cgroup_parent() is None, reason="the kernel OOM killer needs a cgroup memory cap")
def test_materialising_writer_is_oom_killed_and_the_streaming_one_passes(runner, settings):
    sets = prepare_data(settings, "small", ["base"])
    killed = runner.run(RunPlan("append", "pyiceberg-table", "small", sets, 10_000, CAP))
    assert killed.status == "oom"
    assert killed.oom_kills >= 1
    assert "OOM-killed" in killed.error
    assert killed.peak_memory_bytes <= CAP
    checks = {c.name: c for c in killed.verdict.checks}
    assert not checks["operation_completed"].passed
    assert checks["table_unchanged_after_failure"].passed and checks["row_count"].passed

    survived = runner.run(RunPlan("append", "pyiceberg-add-files", "small", sets, 10_000, CAP))
    assert survived.status == "ok" and survived.verdict.passed
