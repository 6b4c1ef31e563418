"""What came of a worker, from what the kernel, the launcher and the worker itself said: pure
functions, no I/O. The exit code alone is never trusted: the kernel's OOM counter and the
worker's report decide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.base.caps import format_size
from harness.base.growth import late_early_ratio
from harness.base.layout_text import FORMAT_VERSION_PROPERTY
from harness.base.progress import Progress
from harness.judge.scan_cost import ScanReport
from harness.model import (
    Feed,
    KillNote,
    OomLimit,
    RunRecord,
    Status,
    TableLayout,
    WorkerOutcome,
    WorkerResult,
    total_cost,
)
from harness.services.launcher import Launch
from harness.services.s3_counter import Traffic

# How a library says it does not write a table's format version: pyiceberg 0.12's `NotImplementedError:
# Writing V3 is not yet supported` (its SQL catalog), `ValueError: Cannot write manifest for table
# version: 3` (through REST).
FORMAT_VERSION_REFUSAL = re.compile(r"^NotImplementedError\b|\b(table|format)[ -]version\b", re.IGNORECASE)


def format_version_refusal(layout: TableLayout, outcome: WorkerOutcome) -> str | None:
    """Why a worker that failed on a v3 (or later) table is `unsupported`, in its library's own
    words: the error it ended with says the library does not write that format version."""
    version = dict(layout.properties).get(FORMAT_VERSION_PROPERTY)
    if outcome.status != "error" or not outcome.error or version is None or int(version) < 3:
        return None
    if not FORMAT_VERSION_REFUSAL.search(outcome.error):
        return None
    return f"writes no v{version} table: {outcome.error}"


def classify(
    feed: Feed,
    rows: int,
    launched: Launch,
    result: WorkerResult | None,
    log: Path,
    *,
    isolation: str,
    timeout_s: float,
    consumes_batches: bool,
    fed: Progress | None = None,
    oom_after_feed_cause: str | None = None,
) -> WorkerOutcome:
    """One worker's status, error and figures. `rows`: the rows it was fed. `fed`: what its
    progress file last said, (rows handed to the writer, rows in all); `oom_after_feed_cause`:
    the writer's known reason for an OOM once every row was fed."""
    outcome = WorkerOutcome(
        name=feed.name,
        source_set=feed.source_set,
        operation=feed.operation,
        rows=rows,
        status="error",
        cap_bytes=launched.enforced_cap_bytes,
        wall_s=round(launched.wall_s, 4),
        cpu_s=None if launched.cpu_s is None else round(launched.cpu_s, 4),
        peak_memory_bytes=launched.peak_memory_bytes,
        memory_timeline=launched.timeline,
        cache_at_peak_bytes=launched.cache_at_peak_bytes,
        oom_kills=launched.oom_kills,
        worker_log=str(log),
    )
    outcome.peak_rss_bytes = peak_rss(launched, result)
    outcome.box_cap_bytes = launched.box_cap_bytes
    if launched.oom_kills:
        outcome.oom_limit = oom_limit(launched)
        if launched.box_at_end is not None:
            outcome.box_usage_at_kill_bytes = launched.box_at_end.usage_bytes
            outcome.box_rss_at_kill_bytes = launched.box_at_end.rss_bytes
    if result is not None:
        outcome.write_s = result.write_s
        outcome.step_latencies_s = result.step_latencies_s
        outcome.commit_latencies_s = result.commit_latencies_s
        outcome.commit_retries = result.commit_retries
        outcome.versions = result.versions
        outcome.file_io = result.file_io
        if consumes_batches:
            outcome.batches = result.batches
            outcome.late_early_ratio = late_early_ratio(result.step_latencies_s)
    outcome.status, outcome.error = status_of(launched, result, log, outcome.cap_bytes, isolation, timeout_s)
    if outcome.status == "oom" and fed is not None:
        outcome.error = f"{outcome.error}, {fed_text(fed, peak_rss(launched, result), oom_after_feed_cause)}"
    return outcome


def oom_limit(launched: Launch) -> OomLimit:
    """Whose limit an OOM kill hit. The kernel counts the kill at the victim's cgroup whichever
    limit was hit (and memory.failcnt stays 0 here), so it is told from the last samples: the
    cgroup with less room left for anonymous memory, the worker's cap or the box around it (the
    harness, its oracle and whatever else lives there share the box)."""
    worker, box = launched.worker_at_end, launched.box_at_end
    if launched.box_cap_bytes is None or box is None:
        return "worker cap"
    if launched.worker_cap_bytes is None or worker is None:
        return "harness box"
    worker_room = launched.worker_cap_bytes - worker.rss_bytes
    box_room = launched.box_cap_bytes - box.rss_bytes
    return "harness box" if box_room <= worker_room else "worker cap"


def fed_text(fed: Progress, peak_bytes: int | None, cause_once_all_fed: str | None) -> str:
    """How far the source got before the kill, and, measured on this build, where the memory grew:
    a writer whose memory grows after it took every row holds the whole data somewhere; the cause,
    where one is known for this very release, is named."""
    if fed.fed < fed.rows:
        return f"with {fed.fed:,} of {fed.rows:,} rows fed to the writer"
    grew = ""
    if fed.rss_bytes and peak_bytes and peak_bytes > fed.rss_bytes:
        grew = (
            f" (its rss {format_size(fed.rss_bytes)} as the last row was fed, {format_size(peak_bytes)} "
            "at the kill: the memory grew after the feed)"
        )
    cause = f": {cause_once_all_fed}" if cause_once_all_fed else ""
    return f"after all {fed.rows:,} rows were fed to the writer{grew}{cause}"


def peak_rss(launched: Launch, result: WorkerResult | None) -> int | None:
    """VmHWM misses children (a JVM); the sampled tree rss misses short spikes: the larger."""
    sampled = max((sample[2] for sample in launched.timeline), default=0)
    return max(sampled, result.peak_rss_bytes or 0 if result else 0) or None


def scan_figures(
    launched: Launch, report: ScanReport | None, log: Path, *, isolation: str, timeout_s: float
) -> dict[str, Any]:
    """The record's selective-scan fields from what the scan program reported and how it ended: a
    failed or killed scan is its reason in `scan_error`."""
    status, error = status_of(launched, report, log, launched.enforced_cap_bytes, isolation, timeout_s)
    if status != "ok" and not (report and report.error):
        error = f"scan process: {error}"  # it said nothing itself: how it ended
    figures: dict[str, Any] = {
        "scan_peak_rss_bytes": peak_rss(launched, report),
        "scan_error": None if status == "ok" else error,
    }
    if report and (scan := report.selective):
        figures.update({
            "selective_scan_s": scan.seconds,
            "selective_scan_files": scan.data_files,
            "selective_scan_delete_files": scan.delete_files,
            "selective_scan_rows": scan.rows,
        })  # fmt: skip
    return figures


def traffic_figures(
    write: Traffic | None, full_scan: Traffic | None, selective: Traffic | None
) -> dict[str, Any]:
    """The record's object-store fields (none where nothing counted): the write's requests by kind
    and bytes both ways, each scan's requests and bytes received."""
    figures: dict[str, Any] = {}
    if write is not None:
        figures.update({
            "object_store_requests": write.requests,
            "object_store_bytes": {"in": write.bytes_in, "out": write.bytes_out},
            "write_requests": write.total,
            "write_requests_usd": write.list_price_usd,
        })  # fmt: skip
    for name, traffic in (("full_scan", full_scan), ("selective_scan", selective)):
        if traffic is not None:
            figures |= {
                f"{name}_requests": traffic.total,
                f"{name}_bytes_out": traffic.bytes_out,
                f"{name}_requests_usd": traffic.list_price_usd,
            }
    return figures


def total_cost_figures(record: RunRecord, reads: int) -> dict[str, Any]:
    """What owning the table the run left costs: the run's own step and `reads` full and selective
    scans of the table, in seconds and in request dollars (model.total_cost). The full scan's
    requests are the oracle's whole read-back, so its dollars are an upper bound."""
    scans_usd = [record.full_scan_requests_usd, record.selective_scan_requests_usd]
    return {
        "reads": reads,
        "total_cost_s": total_cost([record.write_s], [record.full_scan_s, record.selective_scan_s], reads),
        "total_cost_usd": total_cost([record.write_requests_usd], scans_usd, reads),
    }


def status_of(
    launched: Launch,
    result: WorkerResult | None,
    log: Path,
    cap_bytes: int | None,
    isolation: str,
    timeout_s: float,
) -> tuple[Status, str | None]:
    cap = format_size(cap_bytes)
    if launched.oom_kills and oom_limit(launched) == "harness box":
        return "oom", box_oom_text(launched)
    if launched.oom_kills:
        return "oom", f"OOM-killed by the kernel at a {cap} cap (oom_kill count {launched.oom_kills})"
    if isinstance(result, KillNote):  # a scenario passes one on only when the exit code shows the SIGKILL
        return "error", result.describe()
    if result is not None:
        if result.error_kind == "memory":  # RLIMIT_AS: the cap shows up as a failed allocation
            return "oom", f"allocation failed under a {cap} {isolation} cap: {result.error}"
        return result.status, result.error or result.kill_missed
    if launched.timed_out:
        return "error", f"worker timed out after {timeout_s:g} s"
    if isolation == "rlimit" and _mentions_memory_error(launched):
        return "oom", f"allocation failed under a {cap} rlimit cap before the worker could report"
    return "error", _death_notice(launched, log)


def box_oom_text(launched: Launch) -> str:
    """An OOM kill where the harness box filled, not the worker's cap: the box's figures at the kill."""
    box, worker = launched.box_at_end, launched.worker_at_end
    at_kill = ""
    if box is not None:
        at_kill = f" (usage {format_size(box.usage_bytes)}, rss {format_size(box.rss_bytes)} at the kill)"
    own = f"rss {format_size(worker.rss_bytes)} " if worker else ""
    return (
        f"OOM-killed by the kernel: the {format_size(launched.box_cap_bytes)} harness box filled{at_kill}, "
        f"not the worker's {format_size(launched.worker_cap_bytes)} cap (its {own}beside the harness and "
        f"its oracle; oom_kill count {launched.oom_kills})"
    )


def _death_notice(launched: Launch, log: Path) -> str:
    """A worker that died without its report: the last error it printed (kept in memory, so a log
    that could not be written loses nothing) and where its log is, or why there is none."""
    output = launched.output
    said = output.reason() if output else None
    notice = f"worker died with exit code {launched.returncode}" + (f": {said}" if said else "")
    if output is not None and output.log_error:
        return f"{notice} (its log {log} could not be written: {output.log_error})"
    return f"{notice}; see {log}"


def _mentions_memory_error(launched: Launch) -> bool:
    lines = launched.output.lines if launched.output else []
    return any("MemoryError" in line or "bad_alloc" in line for line in lines)
