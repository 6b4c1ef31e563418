"""A report as a browser shows it: report.html rendered by headless Chromium (Debian's `chromium`,
`make browser`), to a PNG, or measured: where each plot's top lies on the page.

The measuring loads a copy of the page with a short script added that, once the page has loaded,
writes each plot's getBoundingClientRect().top into the DOM, which `--dump-dom` then prints.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.errors import IcebenchError

CHROMIUM = "/usr/bin/chromium"
WINDOW = (1280, 2400)  # about two and a half screens of a laptop
SCREEN_HEIGHT = 800  # one screen of that laptop, in CSS pixels
TIMEOUT_S = 120
# Quiet and self-contained: no GPU, no network beyond the file, no first-run work, a fresh profile.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
MEASURE_ID = "icebench-measured"
MEASURE_SCRIPT = f"""<script>
window.addEventListener("load", () => {{
  const tops = Array.from(document.querySelectorAll("img.plot"),
    (img) => [img.id, img.getBoundingClientRect().top + window.scrollY, img.getBoundingClientRect().height]);
  const out = document.createElement("pre");
  out.id = "{MEASURE_ID}";
  out.textContent = JSON.stringify(tops);
  document.body.appendChild(out);
}});
</script>"""


def chromium() -> str:
    """The browser's path; an error that says how to install it when it is missing."""
    found = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")
    if found is None:
        raise IcebenchError(f"no {CHROMIUM}: install Debian's chromium (make browser)")
    return found


@contextmanager
def _profile() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="icebench-chromium-") as directory:
        yield Path(directory)


def _run(arguments: list[str], window: tuple[int, int]) -> str:
    with _profile() as profile:
        command = [
            chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}",
            *arguments,
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise IcebenchError(f"chromium did not finish within {TIMEOUT_S} s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise IcebenchError(f"chromium exited {done.returncode}: {last}")
    return done.stdout


def screenshot(page: Path, png: Path, window: tuple[int, int] = WINDOW) -> Path:
    """Renders `page` (an HTML file) at `window` (width, height in CSS pixels) to `png`."""
    if not page.is_file():
        raise IcebenchError(f"{page} is no file")
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    _run([f"--screenshot={png.resolve()}", page.resolve().as_uri()], window)
    if not png.is_file():
        raise IcebenchError(f"chromium wrote no screenshot of {page}")
    return png


def plot_positions(page: Path, window: tuple[int, int] = WINDOW) -> dict[str, tuple[float, float]]:
    """Each plot of `page` (img.plot, by its id) as laid out at `window`: (top, height) in CSS px."""
    text = page.read_text()
    with tempfile.TemporaryDirectory(prefix="icebench-measure-") as directory:
        measured = Path(directory) / page.name
        measured.write_text(text.replace("</body>", MEASURE_SCRIPT + "</body>", 1))
        dom = _run(["--virtual-time-budget=10000", "--dump-dom", measured.as_uri()], window)
    found = re.search(rf'<pre id="{MEASURE_ID}">(.*?)</pre>', dom, re.DOTALL)
    if found is None:
        raise IcebenchError(f"chromium's DOM of {page} holds no measurement (did the page load?)")
    return {name: (top, height) for name, top, height in json.loads(html.unescape(found.group(1)))}
