"""User-facing errors: one line that names the culprit, then a non-zero exit."""

from pydantic import ValidationError


class IcebenchError(Exception):
    """Bad input or an impossible request; the CLI prints it as one line and exits 2."""

    exit_code = 2


class SourceError(IcebenchError):
    """A source parquet set that is missing, unreadable, corrupt or of the wrong schema."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def one_line(exc: BaseException) -> str:
    """An exception as one line for results and logs; our own errors already name their culprit."""
    if isinstance(exc, IcebenchError):
        return first_line(exc)
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


def first_error(exc: Exception) -> str:
    """The first complaint of a validation error (where: what), or the first line of any other."""
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}" if where else error["msg"]
    return first_line(exc)
