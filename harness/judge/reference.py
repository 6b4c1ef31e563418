"""The second judge: Iceberg Java, the reference implementation, loads every judged table as its
readers would (the metadata file, every snapshot's manifest list, the current snapshot's manifests
and entries; compose/rest-catalog's IcebenchReferenceJudge). What Java refuses fails
`loads_in_reference` with Java's own message: a table only pyiceberg can load is one Spark,
Trino and Flink cannot.

One JVM per harness process, started at the first table and kept (a table costs it milliseconds;
the JVM's start, once, ~0.5 s), stopped at exit and dying with the harness (orphan_guard). Where
it is not built (`make rest-catalog`) or Java is missing, the check is left out and that is said
once: it is never passed in silence.
"""

from __future__ import annotations

import atexit
import json
import select
import shutil
import subprocess
import threading
import time
from typing import Any

from pyiceberg.table import Table

from harness.base.errors import IcebenchError, warn
from harness.base.orphan_guard import guarded
from harness.model import Check
from harness.services.iceberg_java import java_file_io_properties

REFERENCE_CHECK = "loads_in_reference"
MAIN_CLASS = "org.apache.iceberg.rest.IcebenchReferenceJudge"
ANSWER_TIMEOUT_S = 300.0


class ReferenceJudge:
    """The long-lived JVM; `check` is safe from several threads (one request at a time)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._unavailable: str | None = None
        self._said = False

    def check(self, table: Table) -> Check | None:
        """Java's verdict on the table; None where the reference judge cannot run here. A JVM that
        ended under it (it dies with the thread that started it) is started again, once."""
        with self._lock:
            for _ in range(2):
                process = self._running()
                if process is None:
                    return None
                properties = java_file_io_properties(table.io.properties)
                request = {"metadata": table.metadata_location, "properties": properties}
                answer, failure = self._ask(process, request)
                if answer is not None or "timed out" in failure:
                    break
        if answer is None:  # the harness's own limit or fault, never the writer's
            return Check(
                name=REFERENCE_CHECK, passed=False, reason=f"Iceberg Java {failure}", harness_limit=True
            )
        return Check.holds(
            REFERENCE_CHECK,
            bool(answer.get("ok")),
            lambda: f"Iceberg Java refuses the table: {answer.get('error')}",
            expected="loads",
            actual={k: v for k, v in answer.items() if k != "ok"},
        )

    def _running(self) -> subprocess.Popen[bytes] | None:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if self._unavailable is None:
            try:
                self._process = _start()
            except (IcebenchError, OSError) as exc:
                self._unavailable = str(exc)
        if self._unavailable is not None:
            if not self._said:
                warn(f"{REFERENCE_CHECK} is not checked: {self._unavailable}")
                self._said = True
            return None
        return self._process

    def _ask(
        self, process: subprocess.Popen[bytes], request: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str]:
        """Java's answer, or None and why there is none (the JVM is then stopped)."""
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
            deadline = time.monotonic() + ANSWER_TIMEOUT_S
            while not select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                if time.monotonic() >= deadline:
                    self.stop()
                    return None, f"timed out: no answer within {ANSWER_TIMEOUT_S:.0f} s (its JVM was stopped)"
            line = process.stdout.readline()
        except OSError:
            line = b""
        if not line:
            self.stop()
            return None, "ended without an answer, twice (its JVM is started again for the next table)"
        return json.loads(line), ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _start() -> subprocess.Popen[bytes]:
    from harness.services.rest_catalog import classpath  # the server's build holds the class

    if shutil.which("java") is None:
        raise IcebenchError("java is not installed (make install puts it there)")
    command = [
        "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath(), MAIN_CLASS,
    ]  # fmt: skip
    return subprocess.Popen(
        guarded(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )


REFERENCE = ReferenceJudge()
atexit.register(REFERENCE.stop)
