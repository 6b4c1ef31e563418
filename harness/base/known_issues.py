"""Upstream bugs the harness recognises in error messages, so a failed check names its cause."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownIssue:
    pattern: str
    upstream: str
    summary: str


KNOWN_ISSUES = (
    KnownIssue(
        r"Target schema's field names are not matching",
        "apache/iceberg-python#2467",
        "upsert after add_column scans with the snapshot's old schema",
    ),
    KnownIssue(
        r"column \S+ is \[\], expected None",  # content_checksum's first differing row
        "apache/iceberg-python#3833",
        "pyiceberg's writer (and its reader) turn a null list of structs into an empty list",
    ),
    KnownIssue(
        r"arrow_dataset\.to_table\(\)",
        "dlt-hub/dlt#3752",
        "dlt's Iceberg load materialises the whole load in memory (PR dlt-hub/dlt#3753 streams it)",
    ),
)


def match_known_issue(message: str | None) -> KnownIssue | None:
    if not message:
        return None
    return next((issue for issue in KNOWN_ISSUES if re.search(issue.pattern, message)), None)
