"""User-facing errors: one line that names the culprit, then a non-zero exit."""

import difflib
import errno
import tempfile
import traceback
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.base.checkout import REPO_ROOT

# A disk that cannot take the harness's own files: the harness's limit, never a writer's failure.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


class IcebenchError(Exception):
    """Bad input or an impossible request; the CLI prints it as one line and exits 2."""

    exit_code = 2


class IcebenchWarning(UserWarning):
    """Something the user should know that stops nothing; the CLI prints it as `icebench: warning: ...`."""


def warn(message: str) -> None:
    """Only the CLI prints: the layers below hand it their warnings this way."""
    warnings.warn(message, IcebenchWarning, stacklevel=2)


class WorkloadStopped(IcebenchError):
    """A workload stopped short by the harness's own limit (no room for its next point): what ran
    is reported as usual, then this one line and the non-zero exit."""

    def __init__(self, message: str, records: list[Any]) -> None:
        super().__init__(message)
        self.records = records  # the RunRecords of what ran


class SourceError(IcebenchError):
    """A source parquet set that is missing, unreadable, corrupt or of the wrong schema."""


def close_match(name: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` for a near miss of one of the `known` names, else nothing."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]}?)" if matches else ""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def one_line(exc: BaseException) -> str:
    """An exception as one line for results and logs; our own errors already name their culprit."""
    if isinstance(exc, IcebenchError):
        return first_line(exc)
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


def first_error(exc: Exception, env_prefix: str | None = None) -> str:
    """The first complaint of a validation error (`where: what (got VALUE)`; with `env_prefix`,
    `where` is the environment variable, e.g. ICEBENCH_BATCH_ROWS), or the first line of any other."""
    if not isinstance(exc, ValidationError) or not exc.errors():
        return first_line(exc)
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    if env_prefix is not None:
        where = f"{env_prefix}{where.upper()}"
    got = error.get("input")
    shown = f" (got {_shortened(repr(got))})" if isinstance(got, str | int | float) else ""
    return f"{where}: {error['msg']}{shown}" if where else f"{error['msg']}{shown}"


def _shortened(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def os_error_line(exc: OSError) -> str:
    """`cannot use PATH: No space left on device`: the path is the culprit a user can act on."""
    reason = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"cannot use {' -> '.join(paths)}: {reason}" if paths else reason


def failure_line(exc: Exception) -> str:
    """What the CLI prints for a command that failed: bad input and an OS refusal as `error: ...`;
    anything else is a bug of ours, its traceback kept in a file rather than on the screen."""
    our_models = isinstance(exc, ValidationError)  # a model of ours that did not validate: a bug
    if isinstance(exc, IcebenchError) or (isinstance(exc, ValueError) and not our_models):
        return f"error: {first_line(exc)}"
    if isinstance(exc, OSError):
        return f"error: {os_error_line(exc)}"
    kept = ""
    try:
        with tempfile.NamedTemporaryFile("w", prefix="icebench-traceback-", delete=False) as out:
            out.write("".join(traceback.format_exception(exc)))
        kept = f" (traceback in {Path(out.name)})"
    except OSError:
        pass
    return f"internal error: {one_line(exc)}{kept}"


# Python's own errors of a program that is wrong: raised in the harness's code, they are its bug.
OWN_PACKAGES = ("harness", "generators", "scenarios", "reports")
PROGRAMMING_ERRORS = (
    AssertionError,
    AttributeError,
    IndexError,
    KeyError,
    NameError,
    TypeError,
    ZeroDivisionError,
)


def harness_fault(exc: BaseException) -> str | None:
    """`file:line` when `exc` is a programming error raised in icebench's own code (the innermost
    frame of its traceback is ours); None when a library raised it (a table it cannot read)."""
    if not isinstance(exc, PROGRAMMING_ERRORS) or exc.__traceback__ is None:
        return None
    innermost = traceback.extract_tb(exc.__traceback__)[-1]
    path = Path(innermost.filename).resolve()
    if not any(path.is_relative_to(REPO_ROOT / package) for package in OWN_PACKAGES):
        return None
    return f"{path.relative_to(REPO_ROOT)}:{innermost.lineno}"
