"""SIGTERM, SIGHUP, SIGKILL and a second Ctrl-C during cleanup: no worker, service, cgroup,
warehouse or scratch folder outlives the harness (at the latest, the next start-up sweep)."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from harness_process import HarnessRun, wait_for

from harness.base.caps import cgroup_parent
from harness.base.ownership import MARKER, Owner, owned, pid_alive
from harness.base.signals import Terminated, signals_held, terminates_like_ctrl_c
from harness.run.runner import RunPlan
from harness.services.container import remove_orphaned_containers
from harness.services.leftovers import sweep_leftovers
from harness.services.rest_catalog import BUILD_DIR
from harness.services.stacks.embedded import EmbeddedStack

needs_cgroup = pytest.mark.skipif(cgroup_parent() is None, reason="needs a cgroup v1 memory controller")


@needs_cgroup
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_mid_run_cleans_up_like_ctrl_c(settings, tiny_sets, tmp_path, signum):
    run = HarnessRun.start(settings, tmp_path / "results")
    run.wait_for_workers()

    run.process.send_signal(signum)
    _, err = run.process.communicate(timeout=120)
    assert run.process.returncode == 128 + signum
    assert err.decode().strip().splitlines() == [f"icebench: terminated ({signal.Signals(signum).name})"]
    assert run.leftovers() == []
    assert not list(run.results.glob(f"*/{MARKER}"))  # the command ended: it owns nothing


@needs_cgroup
def test_sigkilled_harness_takes_its_worker_along_and_the_next_start_sweeps(settings, tiny_sets, tmp_path):
    run = HarnessRun.start(settings, tmp_path / "results")
    run.wait_for_workers()

    run.process.kill()
    run.process.wait()
    wait_for(lambda: not any(pid_alive(pid) for pid in run.worker_pids))  # PR_SET_PDEATHSIG
    left = run.leftovers()
    assert any(item.startswith("cgroup") for item in left)  # no finally ran: the sweep has work
    assert any(item.endswith("/warehouse") for item in left)
    (marker,) = run.results.glob(f"*/{MARKER}")

    swept = sweep_leftovers(run.results)
    assert {cgroup.name for cgroup in run.cgroups} <= set(swept.cgroups)
    assert run.leftovers() == []
    assert not marker.exists()
    assert (marker.parent / "environment.json").exists()  # results stay


@needs_cgroup
@pytest.mark.skipif(
    not (BUILD_DIR / "classpath.txt").is_file(), reason="REST catalog jar missing: run make rest-catalog"
)
def test_sigkilled_harness_takes_the_local_services_along(settings, tiny_sets, tmp_path):
    run = HarnessRun.start(settings, tmp_path / "results", "append", "--stack", "local-services")
    run.wait_for_workers()
    services = run.service_processes()
    assert sorted(s.name() for s in services) == ["java", "s3-counter", "weed"]
    ports = [
        c.laddr.port for s in services for c in s.net_connections("inet") if c.status == psutil.CONN_LISTEN
    ]
    assert len(ports) >= 2

    run.process.kill()
    run.process.wait()
    wait_for(lambda: not any(pid_alive(p.pid) for p in [*services, *map(psutil.Process, run.worker_pids)]))
    # No icebench service listens there any more. A free port may be taken at once by anything else
    # on the machine (it is from the ephemeral range): that is no leftover of this run.
    for port in ports:
        assert not [cmd for cmd in listeners(port) if SERVICE_PROGRAMS.search(cmd)], f"port {port} still ours"
    sweep_leftovers(run.results)
    assert run.leftovers() == []


SERVICE_PROGRAMS = re.compile(r"weed mini|IcebenchRestServer|s3-counter")


def listeners(port: int) -> list[str]:
    """The command lines of the processes listening on `port` now."""
    found = []
    for conn in psutil.net_connections("inet"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            with contextlib.suppress(psutil.Error):
                found.append(" ".join(psutil.Process(conn.pid).cmdline()))
    return found


def test_sweep_kills_what_a_dead_harness_left_in_its_cgroup_and_spares_the_living(tmp_path):
    parent = cgroup_parent()
    if parent is None:
        pytest.skip("needs a cgroup v1 memory controller")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale, living = parent / f"icebench-{dead_pid}-0123abcd", parent / f"icebench-{os.getpid()}-0123abcd"
    stale.mkdir()
    living.mkdir()
    try:
        orphan = subprocess.Popen(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec sleep 300', str(stale)])
        wait_for(lambda: (stale / "cgroup.procs").read_text().split())
        swept = sweep_leftovers(tmp_path)
        assert orphan.wait(timeout=30) == -signal.SIGKILL
        assert stale.name in swept.cgroups
        assert not stale.exists()
        assert living.exists()
    finally:
        for cgroup in (stale, living):
            if cgroup.exists():
                cgroup.rmdir()


def test_sweep_removes_the_containers_of_a_dead_harness_only():
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except docker.errors.DockerException:
        pytest.skip("no Docker engine")
    # An image of nothing: a container only created, never started, needs no program in it.
    empty_tar = bytes(1024)
    image = client.api.import_image_from_data(empty_tar, repository="icebench-test-empty", tag="latest")
    assert image
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner = Owner.of(dead.pid)
    dead.wait()
    orphan = client.containers.create("icebench-test-empty:latest", ["none"], labels=dead_owner.labels())
    ours = client.containers.create("icebench-test-empty:latest", ["none"], labels=Owner.me().labels())
    try:
        assert remove_orphaned_containers() >= 1
        with pytest.raises(docker.errors.NotFound):
            orphan.reload()
        ours.reload()
    finally:
        ours.remove(force=True)


def test_sweep_cleans_a_dead_owners_run_folders_and_keeps_its_results(tmp_path):
    dead_owner = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path\n"
         "from harness.base.ownership import owned\n"
         "with owned(Path(sys.argv[1])): import os; os.kill(os.getpid(), 9)", str(tmp_path / "dead")],
    )  # fmt: skip
    (tmp_path / "dead").mkdir()
    dead_owner.wait(timeout=60)
    for folder in ("warehouse", "tmp", "worker-a/tmp"):
        (tmp_path / "dead" / "work" / "001-append-x" / folder).mkdir(parents=True)
    (tmp_path / "dead" / "runs.jsonl").write_text("{}\n")
    (tmp_path / "alive" / "work" / "001-append-x" / "warehouse").mkdir(parents=True)

    with owned(tmp_path / "alive"):
        swept = sweep_leftovers(tmp_path)
        assert (tmp_path / "alive" / "work" / "001-append-x" / "warehouse").exists()
    assert {p for p in swept.folders if p.is_relative_to(tmp_path)} == {
        tmp_path / "dead" / "work" / "001-append-x" / folder
        for folder in ("warehouse", "tmp", "worker-a/tmp")
    }
    assert sorted(p.name for p in (tmp_path / "dead").rglob("*")) == [
        "001-append-x",
        "runs.jsonl",
        "work",
        "worker-a",
    ]


def test_an_oom_killed_dlt_worker_leaves_no_scratch(runner, tiny_sets):
    """dlt's pipeline folder (tempfile.mkdtemp) lands in the worker's TMPDIR, which the runner
    removes: the OOM kill leaves nothing in /tmp or the run folder."""
    pytest.importorskip("dlt")
    seen = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.02):
            seen.update(runner.store.folder.glob("work/*/tmp/icebench-dlt-*"))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:  # tiny needs ~265 MiB: at 150 MiB dlt starts, stages, and is OOM-killed
        record = runner.run(RunPlan("append", "dlt", "tiny", tiny_sets, 2_000, 150 * 2**20))
    finally:
        stop.set()
        watcher.join()
    assert record.status == "oom"
    assert seen, "dlt's folder was never in the worker's scratch"
    assert not any(path.exists() for path in seen)
    assert not list(runner.store.folder.glob("work/*/tmp"))


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt in this process, also when the suite runs as a background
    job (which inherits SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_during_release_still_purges_the_run(runner, tiny_sets, monkeypatch, ctrl_c_raises):
    """The namespace purge (Stack.release) finishes; the Ctrl-C that came meanwhile follows it."""
    released = []
    real_release = EmbeddedStack.release

    def release_interrupted(stack, run, keep):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here: the signal is held, not raised
        real_release(stack, run, keep)
        released.append(run.work)

    monkeypatch.setattr(EmbeddedStack, "release", release_interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run(RunPlan("append", "pyiceberg-add-files", "tiny", tiny_sets, 2_000, 1 << 30))
    (work,) = released
    assert not (work / "warehouse").exists()


def test_sigterm_during_held_cleanup_ends_the_command_once_cleanup_is_done():
    steps = []

    @terminates_like_ctrl_c
    def command() -> int:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            steps.append("cleanup finished")
        steps.append("went on after the signal")
        return 0

    assert command() == 143
    assert steps == ["cleanup finished"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the command


def test_terminated_is_no_exception_to_swallow():
    assert not issubclass(Terminated, Exception)


@needs_cgroup
def test_ctrl_c_twice_leaves_nothing_behind(settings, tiny_sets, tmp_path):
    """Best effort: the second Ctrl-C lands somewhere in the cleanup the first started."""
    run = HarnessRun.start(settings, tmp_path / "results")
    run.wait_for_workers()

    run.process.send_signal(signal.SIGINT)
    time.sleep(0.2)
    run.process.send_signal(signal.SIGINT)
    run.process.communicate(timeout=120)
    assert run.process.returncode in (130, -signal.SIGINT)  # -SIGINT: the second came after main returned
    assert run.leftovers() == []


@pytest.mark.parametrize(
    ("signum", "line"),
    [(signal.SIGTERM, "icebench: terminated (SIGTERM)"), (signal.SIGINT, "icebench: interrupted")],
)
def test_a_signal_while_the_command_loads_its_libraries_says_so(tmp_path, signum, line):
    """A signal before main() takes the signals over ends the command with the same line and exit
    code as later (SIGTERM died silently with 143, Ctrl-C printed a 35-line traceback)."""
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "generate",
        "--preset",
        "wide",
        "--out",
        str(tmp_path / "set"),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum
    assert err.strip().splitlines()[-1] == line, err
    assert "Traceback" not in err
