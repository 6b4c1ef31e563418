"""Typed settings: defaults < config file (TOML) < ICEBENCH_* environment < command-line flags."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from harness.errors import IcebenchError

Isolation = Literal["auto", "cgroup", "docker", "rlimit", "none"]

CONFIG_ENV = "ICEBENCH_CONFIG"
DEFAULT_CONFIG = Path("icebench.toml")


class Settings(BaseSettings):
    """Everything a run may be tuned with; one object, passed down explicitly."""

    model_config = SettingsConfigDict(env_prefix="ICEBENCH_", extra="forbid")

    data_dir: Path = Field(Path(".icebench/data"), description="cache of generated parquet sets")
    results_dir: Path = Field(Path("results"), description="where results/<run-id>/ folders go")
    seed: int = 42
    memory: str = Field("2g", description="memory cap of each worker, e.g. 512m, 2g")
    harness_memory: str | None = Field(
        None, description="cap on the harness process itself, its workers nested inside, e.g. 4g"
    )
    isolation: Isolation = "auto"
    worker_image: str = Field("icebench/worker:local", description="image of --isolation docker workers")
    stack: str = Field("embedded", description="embedded | local-services | external")
    # The `external` stack: your REST catalog and S3. Credentials only via the environment
    # (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, PYICEBERG_CATALOG__ICEBENCH__TOKEN, ...).
    catalog_uri: str | None = None
    warehouse: str | None = None
    s3_endpoint: str | None = None
    s3_region: str = "us-east-1"
    s3_path_style: bool = True
    batch_rows: int = Field(10_000, gt=0, description="rows per batch handed to the writer")
    sample_interval_s: float = Field(0.05, gt=0, description="memory timeline sampling period")
    timeline_points: int = Field(400, gt=10, description="samples kept per run after downsampling")
    keep_warehouse: bool = Field(False, description="keep each run's warehouse for inspection")
    worker_timeout_s: float = Field(1800.0, gt=0)
    spark_master: str = Field(
        "local[*]", description="Spark writers' master: local[*], or a cluster such as spark://host:7077"
    )
    verify_with: Literal["pyiceberg", "spark"] = Field(
        "pyiceberg", description="engine the oracle reads tables with (spark: also checks it agrees)"
    )
    profile: Literal["memray"] | None = Field(
        None, description="record the worker's allocations (memray, native frames) and a flame graph"
    )
    library_versions: dict[str, list[str]] = Field(
        {}, description="run the workers with these versions of a writer library, e.g. pyiceberg"
    )
    update_ratio: float = Field(0.2, ge=0, le=1)
    insert_ratio: float = Field(0.1, ge=0, le=10)

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


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise IcebenchError(f"config file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise IcebenchError(f"config file {path} is not valid TOML: {exc}") from None


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings from the `[settings]` table of the config file, the environment, then overrides."""
    path = config or (Path(os.environ[CONFIG_ENV]) if CONFIG_ENV in os.environ else None)
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    from_file = read_toml(path).get("settings", {}) if path else {}
    env = Settings()  # environment over defaults
    merged = {**from_file, **env.model_dump(exclude_unset=True)}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings.model_validate(merged)
    except ValueError as exc:
        first = str(exc).splitlines()
        raise IcebenchError(f"invalid settings: {' '.join(first[:3])}") from None
