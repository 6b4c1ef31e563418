"""What a maintenance step promises, held against what it did (after the oracle's checks of the
table, which a step must leave holding the same rows: harness/judge/oracle.py).

- compact: at most the snapshots its maintainer makes of one (one; Spark's two: files, then
  manifests), a commit each (none when no partition was worth a rewrite);
- expire: no snapshot added, the current one kept, at most one commit;
- orphans: no commit at all, and no orphan left;
- every step: nothing unreachable left behind once it succeeded.
Every snapshot the metadata still holds must stay readable after any of them: the oracle's
`live_snapshot_files_exist`, on every run.

A step that failed is the maintainer's failure, not the writer's: its `operation_completed` is a
limit of the run (`harness_limit`), and the table must be as it was.
"""

from __future__ import annotations

from harness.judge.oracle import Evidence, no_orphans_check, operation_checks
from harness.model import Check, Maintenance


def maintenance_checks(
    evidence: Evidence, step: Maintenance, maintainer: str, compaction_snapshots: int = 1
) -> list[Check]:
    if evidence.error is not None:
        checks = operation_checks(evidence)  # the failure, and the table at its snapshot
        for check in checks:
            if not check.passed and check.name == "operation_completed":
                check.reason = f"maintainer {maintainer}: {check.reason}"
                check.harness_limit = True  # the maintainer's failure, never the writer's
        return checks
    added, commits = evidence.metrics["snapshots_added"], evidence.commits
    checks = [no_orphans_check(evidence.orphans)]
    if step == Maintenance.COMPACT:
        most = compaction_snapshots
        checks += [
            Check.holds(
                "compaction_snapshots",
                added <= most,
                f"a compaction added {added} snapshots, its maintainer makes {most}",
                expected=f"<= {most}",
                actual=added,
            ),
            Check.holds(
                "compaction_commits",
                commits <= most,
                f"{commits} catalog commits for one compaction, its maintainer makes {most}",
                expected=f"<= {most}",
                actual=commits,
            ),
        ]
    elif step == Maintenance.EXPIRE:
        checks += [
            Check.equal("expire_adds_no_snapshot", 0, added, f"an expiry added {added} snapshots"),
            Check.equal(
                "current_snapshot_kept",
                evidence.before.current_snapshot_id,
                evidence.after.current_snapshot_id,
                "the expiry moved the table to another snapshot",
            ),
            Check.holds(
                "single_commit",
                commits <= 1,
                f"{commits} catalog commits for one expiry",
                expected="<= 1",
                actual=commits,
            ),
        ]
    else:  # orphans: files deleted, the metadata untouched
        checks.append(
            Check.equal("no_commit", 0, commits, f"removing orphan files made {commits} catalog commits")
        )
    return checks
