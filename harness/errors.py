"""User-facing errors: one line that names the culprit, then a non-zero exit."""


class IcebenchError(Exception):
    """Bad input or an impossible request; the CLI prints it as one line and exits 2."""

    exit_code = 2


class SourceError(IcebenchError):
    """A source parquet set that is missing, unreadable, corrupt or of the wrong schema."""
