"""Typed settings: defaults < config file (TOML) < ICEBENCH_* environment < command-line flags."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from harness.base.builds import check_library_version
from harness.base.caps import ByteSize
from harness.base.config_file import CATALOGS, DEFAULT_CATALOG, read_toml
from harness.base.errors import IcebenchError, close_match, first_error
from harness.base.orphan_guard import PARENT_ENV
from harness.model import EngineOptions

Isolation = Literal["auto", "cgroup", "docker", "rlimit", "none"]

CONFIG_ENV = "ICEBENCH_CONFIG"
BOX_ENV = "ICEBENCH_HARNESS_BOX"  # set inside the --harness-memory box: the command runs there, not again
WRITER_FILES_ENV = "ICEBENCH_WRITER_FILES"  # --writer-file's references, to every process of the run
DEFAULT_CONFIG = Path("icebench.toml")
ENV_PREFIX = "ICEBENCH_"
# The S3 endpoint of sets on S3 (`--source s3://...`, `generate --out s3://...`), set by the stack
# that has one: its object store itself, not its request counter (the source is not the table's
# traffic). Empty: the AWS default endpoint. Unset: no stack with an object store runs.
SOURCES_ENDPOINT_VARIABLE = "ICEBENCH_SOURCES_S3_ENDPOINT"
# ICEBENCH_* variables that are not settings: the config file's path, the harness box, the writer files, the
# test suite's switch, the build cache, the Rust worker's profile, what compose/'s scripts and services read.
OTHER_VARIABLES = frozenset(
    {
        CONFIG_ENV,
        BOX_ENV,
        WRITER_FILES_ENV,
        PARENT_ENV,
        SOURCES_ENDPOINT_VARIABLE,  # set while a stack runs: a command started inside it must not fail
        "ICEBENCH_REQUIRE_DOCKER",
        "ICEBENCH_CACHE",
        "ICEBENCH_RUST_PROFILE",  # the Rust worker's cargo profile (harness/services/rust_worker.py)
        "ICEBENCH_ENGINE_OWNER",
        "ICEBENCH_DOCKER_DIR",
        "ICEBENCH_DOCKERD_OPTS",
    }
)
OTHER_PREFIXES = ("ICEBENCH_REST_",)  # the REST catalog server's own variables (compose/rest-catalog)
# Engine options that also have a variable of their own (older than [engines]): variable -> where.
ENGINE_VARIABLES = {"ICEBENCH_SPARK_MASTER": ("spark", "master")}
EngineTables = dict[str, dict[str, Any]]  # engine -> its options, as [engines.<engine>] holds them
Options = TypeVar("Options", bound=EngineOptions)
MAX_TIMEOUT_S = 7 * 86_400  # a week; threading's timers refuse far larger (and inf, nan)
MAX_BATCH_ROWS = 2**31 - 1


class Settings(BaseSettings):
    """Everything a run may be tuned with; one object, passed down explicitly."""

    model_config = SettingsConfigDict(env_prefix="ICEBENCH_", extra="forbid")

    data_dir: Path = Field(Path(".icebench/data"), description="cache of generated parquet sets")
    results_dir: Path = Field(Path("results"), description="where results/<run-id>/ folders go")
    seed: int = Field(42, ge=0, le=2**63 - 1)
    memory: ByteSize = Field(2 * 2**30, description="memory cap of each worker, e.g. 512m, 2g")
    harness_memory: ByteSize | None = Field(
        None, description="cap on the harness process itself, its workers nested inside, e.g. 4g"
    )
    allow_overcommit: bool = Field(False, description="accept a cap above the machine's memory")
    allow_memory_above_box: bool = Field(False, description="accept a worker cap above harness_memory")
    isolation: Isolation = "auto"
    worker_image: str = Field("icebench/worker:local", description="image of --isolation docker workers")
    stack: str = Field("embedded", description="embedded | local-services | external")
    catalog: str = Field(
        DEFAULT_CATALOG,
        description="local-services' REST catalog: iceberg-rest-fixture | seaweedfs (SeaweedFS's own)",
    )
    # The `external` stack: your REST catalog and S3. Credentials only via the environment
    # (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, PYICEBERG_CATALOG__ICEBENCH__TOKEN, ...).
    catalog_uri: str | None = None
    warehouse: str | None = None
    s3_endpoint: str | None = None
    s3_region: str = "us-east-1"
    s3_path_style: bool = True
    batch_rows: int = Field(
        10_000, gt=0, le=MAX_BATCH_ROWS, description="rows per batch handed to the writer"
    )
    sample_interval_s: float = Field(
        0.05, gt=0, le=60, allow_inf_nan=False, description="memory timeline sampling period"
    )
    timeline_points: int = Field(
        400, gt=10, le=1_000_000, description="samples kept per run after downsampling"
    )
    keep_warehouse: bool = Field(False, description="keep each run's warehouse for inspection")
    worker_timeout_s: float = Field(
        1800.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="a worker's time limit per million rows it is fed (never less than this)",
    )
    # Options of the plug-ins' engines, validated against the plug-ins' option models by their users.
    engines: EngineTables = Field(
        {}, description="options per engine, e.g. {spark = {master = ...}} ([engines.<engine>] tables)"
    )
    verify_with: str = Field(
        "pyiceberg",
        description="pyiceberg (the oracle's own read), or a verifier that must agree with it "
        "(the one judged where pyiceberg cannot read the rows: equality deletes)",
    )
    profile: Literal["memray"] | None = Field(
        None, description="record the worker's allocations (memray, native frames) and a flame graph"
    )
    library_versions: dict[str, list[str]] = Field(
        {}, description="run the workers with these versions of a writer library, e.g. pyiceberg"
    )
    file_ios: list[str] = Field(
        [],
        description="run the pyiceberg writers through each FileIO in turn: pyarrow, fsspec, opendal",
    )
    scan_cost: bool = Field(
        True, description="after each write, time a full and a selective scan of the table (one fixed reader)"
    )
    reads: int = Field(
        10,
        ge=0,
        le=1_000_000,
        description="the downstream reads a table's total cost counts: this many full and selective scans",
    )
    update_ratio: float = Field(0.2, ge=0, le=1, allow_inf_nan=False)
    insert_ratio: float = Field(0.1, ge=0, le=10, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _not_empty(cls, value: object) -> object:
        """An empty value would mean a default in silence (results_dir: the current folder)."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("catalog_uri", "s3_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
            raise ValueError(f"{value!r} is no http:// or https:// URL")
        return value

    @field_validator("library_versions")
    @classmethod
    def _versions(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for library, versions in value.items():
            if not versions:
                raise ValueError(f"no version of {library}")
            versions[:] = [check_library_version(version, library) for version in versions]
        return value

    def engine_table(self, model: type[EngineOptions]) -> dict[str, Any]:
        """What the config file, environment and flags set for `model`'s engine, not yet validated."""
        return dict(self.engines.get(model.engine, {})) if model.engine else {}

    def engine_options(self, model: type[Options]) -> Options:
        """The same as `model`; a bad option is one line naming its table and the option."""
        return validate_options(model, self.engine_table(model), f"[engines.{model.engine}]")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings


def check_environment(environ: dict[str, str] | None = None) -> None:
    """An ICEBENCH_* variable that is no setting is a typo (ICEBENCH_MEMROY) that would otherwise
    be ignored in silence."""
    environ = dict(os.environ if environ is None else environ)
    known = [name.upper() for name in Settings.model_fields]
    known += [name.removeprefix(ENV_PREFIX) for name in ENGINE_VARIABLES]
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in OTHER_VARIABLES or name.startswith(OTHER_PREFIXES):
            continue
        setting = name.removeprefix(ENV_PREFIX)
        if setting in known:
            continue
        hint = close_match(setting, known).replace("mean ", f"mean {ENV_PREFIX}")
        raise IcebenchError(
            f"unknown environment variable {name}{hint}; "
            f"every setting is {ENV_PREFIX}<NAME> (docs/configuration.md)"
        )


def load_settings(
    config: Path | None = None, *, engines: EngineTables | None = None, **overrides: Any
) -> Settings:
    """Settings from the `[settings]` table of the config file, the environment, then overrides;
    engine options from its `[engines.*]` tables, ICEBENCH_ENGINES and the engines' own variables,
    then `engines` (the flags), option by option."""
    path = config or (Path(os.environ[CONFIG_ENV]) if CONFIG_ENV in os.environ else None)
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    tables = read_toml(path) if path else {}
    from_file = tables.get("settings", {})
    check_environment()
    try:
        env = Settings()  # environment over defaults
    except ValueError as exc:
        complaint = first_error(exc, ENV_PREFIX)
        raise IcebenchError(f"invalid setting in the environment: {complaint}") from None
    if from_file:  # the file's own values, whatever overrides them: a bad one is a mistake all the same
        try:  # given to the constructor, they win over the environment, which was found valid above
            Settings(**{**from_file, "engines": {}})
        except ValueError as exc:
            raise IcebenchError(f"invalid setting in config file {path}: {first_error(exc)}") from None
    from_env = env.model_dump(exclude_unset=True)
    merged = {**from_file, **from_env}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    merged["engines"] = _merged_engines(
        from_file.get("engines"), tables.get("engines"), from_env.get("engines"), _engine_variables(), engines
    )
    try:
        return Settings.model_validate(merged)
    except ValueError as exc:
        where = f"config file {path} or the command line" if path else "the command line"
        raise IcebenchError(f"invalid setting ({where}): {first_error(exc)}") from None


def _engine_variables() -> EngineTables:
    found: EngineTables = {}
    for variable, (engine, option) in ENGINE_VARIABLES.items():
        if variable in os.environ:
            found.setdefault(engine, {})[option] = os.environ[variable]
    return found


def _merged_engines(*layers: EngineTables | None) -> EngineTables:
    """Later layers win option by option; an option set to None (a flag not given) sets nothing."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for engine, options in (layer or {}).items():
            if isinstance(options, dict) and isinstance(merged.get(engine, {}), dict):
                merged[engine] = {
                    **merged.get(engine, {}),
                    **{k: v for k, v in options.items() if v is not None},
                }
            else:
                merged[engine] = options  # not a table: Settings' validation names it
    return merged


def validate_options(model: type[Options], values: dict[str, Any], owner: str) -> Options:
    """`values` as `model`; a bad option is one line naming `owner` (a writer, an [engines.*] table)
    and the option."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = ".".join(str(part) for part in error["loc"])
        if error["type"] != "extra_forbidden":
            raise IcebenchError(f"{owner}: option {first_error(exc)}") from None
        takes = ", ".join(model.model_fields) or "no options"
        hint = close_match(option, list(model.model_fields))
        raise IcebenchError(f"{owner}: unknown option {option}{hint}; it takes {takes}") from None


def check_engines(engines: EngineTables, known: dict[str, type[EngineOptions]]) -> None:
    """Every [engines.<engine>] table names an engine a plug-in takes options for (`known`: engine
    -> options model) and holds only its options."""
    for engine, values in engines.items():
        if engine not in known:
            hint = close_match(engine, sorted(known))
            choices = ", ".join(f"[engines.{name}]" for name in sorted(known)) or "none"
            raise IcebenchError(f"unknown engine [engines.{engine}]{hint}; engines with options: {choices}")
        validate_options(known[engine], values, f"[engines.{engine}]")


def check_catalog(settings: Settings) -> None:
    """--catalog names one local-services can run, and only there (the others have their own)."""
    if settings.catalog not in CATALOGS:
        raise IcebenchError(
            f"unknown catalog {settings.catalog!r} (local-services runs: {', '.join(CATALOGS)})"
        )
    if settings.catalog != DEFAULT_CATALOG and settings.stack != "local-services":
        raise IcebenchError(
            f"--catalog {settings.catalog} is a catalog of the local-services stack; "
            f"the {settings.stack} stack has its own"
        )
