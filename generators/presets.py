"""Named data set sizes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    rows: int
    columns: int
    files: int


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("tiny", rows=10_000, columns=20, files=2),
        Preset("small", rows=200_000, columns=100, files=4),
        Preset("wide", rows=1_000_000, columns=400, files=10),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
