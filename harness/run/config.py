"""The workloads as a config file's `[matrix]` and `[rounds]` tables declare them, each axis once:
a field, its range and its command-line flag (`Flag`), which harness/cli/flags.py turns into the
flag of `matrix` and `rounds`. Light on purpose: the CLI reads it before it loads any engine; the
plug-in registries load only when a config is resolved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from generators.presets import at_rows, get_preset
from harness.base.caps import ByteSize
from harness.base.config_file import Flag, read_table
from harness.base.errors import IcebenchError
from harness.base.layout_text import (
    FORMAT_VERSION_PROPERTY,
    parse_layout,
    parse_partition,
    parse_property,
    parse_sort,
)
from harness.base.row_counts import row_count
from harness.model import DEFAULT_ROUND_PHASES, ROUND_PHASES, Maintenance, TableLayout

if TYPE_CHECKING:  # annotations only: settings load pydantic-settings, which the CLI's help need not
    from harness.base.settings import Settings

DEFAULT_SCALE_BATCHES = [50, 100, 200]
DEFAULT_ROUNDS_WRITERS = ["pyiceberg-add-files", "pyiceberg-fast-append", "pyiceberg-txn-batches"]


def _row_count(value: object) -> object:
    """`3M` as 3,000,000 (a flag, a TOML string); a TOML integer as it is."""
    return row_count(value) if isinstance(value, str) else value


RowCount = Annotated[int, BeforeValidator(_row_count), Field(ge=1)]


def comma_list(text: str) -> list[str]:
    """Names or versions as the command line and TOML give them: `a, b,,c` is a, b and c."""
    return [item.strip() for item in text.split(",") if item.strip()]


def comma_separated(value: object) -> object:
    """A config list given as one `a,b` string (a flag, an environment variable) made a list; a
    string naming nothing is refused, not read as the default (leave the key out for that)."""
    if not isinstance(value, str):
        return value
    if not comma_list(value):
        raise ValueError(f"{value!r} names nothing: leave the key out for its default")
    return comma_list(value)


class Axes(BaseModel):
    """What every workload varies: a field here is an axis of `matrix` and `rounds` alike, in both
    config tables and on both commands."""

    model_config = ConfigDict(extra="forbid")
    writers: Annotated[
        list[str], Flag("--writers", "comma-separated writers (default: the workload's own)", names="writer")
    ] = Field(default_factory=list)

    # The layout axis (harness/base/layout_text.py): a table per partitioning ("" / "none":
    # unpartitioned), each with the same sort order and table properties.
    partitions: Annotated[
        list[str],
        Flag(
            "--partition",
            "partition the table: day(ts), bucket[16](id) or bucket(16, id), truncate[4](name), a column; "
            "several fields comma-separated; 'none' unpartitioned; given again, another table",
            metavar="SPEC",
            repeated=True,
            check=parse_partition,
        ),
    ] = Field(default_factory=lambda: [""])
    sort: Annotated[
        str,
        Flag(
            "--sort", "the table's sort order, e.g. 'c001_int32 desc'", metavar="COL[,COL]", check=parse_sort
        ),
    ] = ""
    table_properties: Annotated[
        list[str],
        Flag(
            "--table-property",
            "a table property, e.g. write.target-file-size-bytes=134217728, format-version=1",
            metavar="KEY=VALUE",
            repeated=True,
            check=parse_property,
        ),
    ] = Field(default_factory=list)
    format_versions: Annotated[
        list[Annotated[int, Field(ge=1, le=3)]],  # Iceberg's format versions
        Flag(
            "--format-version",
            "the tables' Iceberg format versions, e.g. 1,2,3 (default: the catalog's, 2): a table each",
            metavar="VERSIONS",
        ),
    ] = Field(default_factory=list)
    maintainer: Annotated[
        str,
        Flag(
            "--maintainer",
            "the engine of the maintenance steps (default: each writer's own)",
            metavar="NAME",
        ),
    ] = ""
    _split = field_validator("writers", "format_versions", mode="before")(comma_separated)

    def maintainer_of(self, writer: str) -> str:
        """Who maintains `writer`'s table: the one named, else the writer's own maintainer."""
        from harness.engines.writers import get_writer  # the registry

        return self.maintainer or get_writer(writer).maintained_with

    def layouts(self) -> list[TableLayout]:
        """The tables each pair runs on, one per partitioning and format version (one-line error for
        a bad spelling)."""
        versions = [[f"{FORMAT_VERSION_PROPERTY}={v}"] for v in dict.fromkeys(self.format_versions)] or [[]]
        return list(
            dict.fromkeys(
                parse_layout(spec, self.sort, [*self.table_properties, *version])
                for spec in self.partitions or [""]
                for version in versions
            )
        )


class MatrixConfig(Axes):
    """The `[matrix]` table of a config file; empty lists mean all."""

    presets: Annotated[
        list[str], Flag("--preset", "comma-separated presets (default: small)", names="preset")
    ] = Field(default_factory=lambda: ["small"])
    scenarios: Annotated[
        list[str],
        Flag("--scenarios", "comma-separated scenarios (default: the matrix's own)", names="scenario"),
    ] = Field(default_factory=list)
    repeat: Annotated[int, Flag("--repeat", "runs of each pair, for medians (default: 1)")] = Field(
        1, ge=1, le=1000, description="runs of each pair; gates compare medians"
    )
    # The scale axis: the same batch size at each of these batch counts (prefixes of the set), for
    # the scenarios of the matrix that take a prefix (append). `scale_batches` is its former name.
    batches: Annotated[
        list[int],
        Flag(
            "--batches",
            "the scale axis: also run the pairs of append-like scenarios at these batch counts (50,100,200)",
            metavar="COUNTS",
        ),
    ] = Field(default_factory=list, validation_alias=AliasChoices("batches", "scale_batches"))
    # The writers on the axis; empty: the matrix's. Naming some (--scale) asks for the axis, by
    # default over 50, 100 and 200 batches.
    scale_writers: Annotated[
        list[str],
        Flag(
            "--scale",
            "the writers on the scale axis (default: the matrix's; alone, over 50,100,200 batches)",
            metavar="WRITERS",
            names="writer",
        ),
    ] = Field(default_factory=list)
    scale_batch_rows: int | None = Field(
        500, ge=1, description="rows per batch on the axis, at most (None: the set over the largest count)"
    )
    whole_set: bool = Field(
        True, description="each pair also on its whole set (icebench scale: only the axis)"
    )
    # The rows axis: each preset at these row counts instead (its shape and rows per file; batches
    # of the same size, so more of them), for growth in rows beside growth in batches (reports/rows.py).
    rows: Annotated[
        list[RowCount],
        Flag(
            "--rows",
            "the rows axis: each preset at these row counts (1M,3M,10M: the preset's shape at each)",
            metavar="COUNTS",
        ),
    ] = Field(default_factory=list)
    # The cap axis: each pair under each cap (empty: the settings' one cap); --memory 2g,4g.
    memory: list[ByteSize] = Field(default_factory=list)
    # Maintenance of each pair's table after its write, each step a run of its own (the rounds'
    # steps): what owning the table costs once it is kept.
    maintenance: Annotated[
        list[Maintenance],
        Flag(
            "--maintenance",
            f"after each write, these maintenance steps on its table, in order ({', '.join(Maintenance)})",
            metavar="STEPS",
        ),
    ] = Field(default_factory=list)
    # Bisect the smallest cap each pair survives (harness/run/find_cap.py), below the largest cap.
    find_cap: Annotated[
        bool,
        Flag(
            "--find-cap", "bisect the smallest cap each pair survives (to ~10%), below the largest --memory"
        ),
    ] = False

    _split_matrix = field_validator(
        "presets", "scenarios", "scale_writers", "memory", "maintenance", "rows", mode="before"
    )(comma_separated)

    def caps(self, settings: Settings) -> list[int]:
        """The caps each pair runs under, smallest first."""
        return sorted(set(self.memory or [settings.memory]))

    @field_validator("batches")
    @classmethod
    def _counts(cls, value: list[int]) -> list[int]:
        if value and (len(set(value)) < 2 or min(value) < 1):
            raise ValueError("give at least two different positive batch counts, e.g. [50, 100, 200]")
        return sorted(set(value))

    def resolved(self) -> MatrixConfig:
        """Every name checked (one-line error for an unknown one), defaults filled in."""
        from harness.run.plugins import (  # the registries
            check_names,
            default_scenarios,
            default_writers,
            with_file_writers,
        )

        check_names(
            presets=self.presets,
            scenarios=self.scenarios,
            writers=[*self.writers, *self.scale_writers],
            maintainers=[self.maintainer] if self.maintainer else [],
        )
        presets = list(
            dict.fromkeys(at_rows(get_preset(name), rows).name for name in self.presets for rows in self.rows)
        )
        chosen_writers = with_file_writers(self.writers or default_writers())
        batches = self.batches or (DEFAULT_SCALE_BATCHES if self.scale_writers else [])
        scale_writers = with_file_writers(self.scale_writers) if self.scale_writers else chosen_writers
        return self.model_copy(
            update={
                "presets": presets or self.presets,
                "rows": [],  # spent: the presets name their counts, so resolving again changes nothing
                "scenarios": self.scenarios or default_scenarios(),
                "writers": chosen_writers,
                "batches": batches,
                "scale_writers": scale_writers if batches else [],
            }
        )


class RoundsConfig(Axes):
    """The `[rounds]` table of a config file (no writers: pyiceberg-add-files, -fast-append and
    -txn-batches)."""

    preset: Annotated[str, Flag("--preset", "the preset (default: small)", names="preset")] = "small"
    rounds: Annotated[int, Flag("--rounds", "how many rounds (default 5, 2 to 100)")] = Field(
        5, ge=2, le=100, description="at least two: the degradation rate compares rounds"
    )
    phases: Annotated[
        list[str],
        Flag(
            "--phases",
            f"comma-separated, in a round's order, repeats allowed (default {','.join(DEFAULT_ROUND_PHASES)}"
            f"; maintenance: {', '.join(Maintenance)})",
        ),
    ] = Field(default_factory=lambda: list(DEFAULT_ROUND_PHASES), description="in order, each round")
    _split_phases = field_validator("phases", mode="before")(comma_separated)

    @field_validator("phases")
    @classmethod
    def _known_phases(cls, value: list[str]) -> list[str]:
        unknown = [phase for phase in value if phase not in ROUND_PHASES]
        if unknown or not value:
            raise ValueError(
                f"phases are names from {', '.join(ROUND_PHASES)}, in the order of a round; got {value}"
            )
        if all(isinstance(ROUND_PHASES[phase], Maintenance) for phase in value):
            raise ValueError(f"a round needs a phase that writes (append, upsert or replace); got {value}")
        if "append" in value and value[0] != "append":
            # an append after the round's upsert or replace would add its keys a second time
            raise ValueError(f"a round that appends appends first; got {value}")
        return value

    def blocks(self) -> list[int]:
        """Each phase's block, round after round: every append a block of its own (generators'
        `round-B` set), every other phase the round's last one."""
        numbers: list[int] = []
        appended = 0
        for round_number in range(1, self.rounds + 1):
            last = appended if "append" in self.phases else round_number
            for phase in self.phases:
                if phase == "append":
                    appended += 1
                    last = appended
                numbers.append(last)
        return numbers

    def resolved(self) -> RoundsConfig:
        """Every name checked: a one-line error for an unknown preset or writer; no writers named:
        the rounds' own."""
        from harness.run.plugins import check_names, with_file_writers  # the registries

        maintainers = [self.maintainer] if self.maintainer else []
        check_names(presets=[self.preset], writers=self.writers, maintainers=maintainers)
        return self.model_copy(update={"writers": with_file_writers(self.writers or DEFAULT_ROUNDS_WRITERS)})

    def set_names(self) -> list[str]:
        """The sets the rounds feed and judge with: each block's set and, for the blocks upserted,
        their change sets."""
        from generators.datasets import round_changes, round_set  # numpy and pyarrow: on use

        blocks = self.blocks()
        phases = self.phases * self.rounds
        upserted = [block for block, phase in zip(blocks, phases, strict=True) if phase == "upsert"]
        return [round_set(n) for n in range(1, max(blocks) + 1)] + [
            round_changes(n) for n in dict.fromkeys(upserted)
        ]


@dataclass(frozen=True)
class YourData:
    """Your data as the flags give it; all None: a preset's data."""

    source: str | None = None
    key: list[str] | None = None
    changes: str | None = None
    base: str | None = None  # `run --base`: the set the table holds before
    ratios: tuple[str, ...] = ()  # the flags of a derived change set's shape given (--update-ratio ...)

    @property
    def on_s3(self) -> bool:
        """Your set is on the stack's object store (`s3://bucket/prefix`)."""
        return (self.source or "").startswith("s3://")

    def check_needs_source(self) -> None:
        for flag, value in (("--key", self.key), ("--changes", self.changes)):
            if value is not None and self.source is None:
                shown = ",".join(value) if isinstance(value, list) else value
                raise IcebenchError(f"{flag} {shown}: it is about your data; give your data with --source")

    def check_used(self, needs: set[str], scenarios: list[str]) -> None:
        """A change set given, or shaped, for scenarios that take none would change nothing."""
        takes_changes = "changes" in needs and self.base is None  # with --base, --source is the set fed
        what = f"{', '.join(scenarios)} {'takes' if len(scenarios) == 1 else 'take'} no change set"
        if self.changes is not None and not takes_changes:
            raise IcebenchError(f"--changes {self.changes}: {what}" + (" here (--base)" if self.base else ""))
        if self.ratios and not takes_changes:
            raise IcebenchError(f"{self.ratios[0]} shapes a derived change set: {what}")
        if self.ratios and self.changes is not None:
            raise IcebenchError(f"{self.ratios[0]} shapes a derived change set: --changes gives yours")


def load_matrix_config(path: Path | None) -> MatrixConfig:
    return read_table(path, "matrix", MatrixConfig)


def load_rounds_config(path: Path | None) -> RoundsConfig:
    return read_table(path, "rounds", RoundsConfig)
