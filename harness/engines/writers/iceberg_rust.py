"""iceberg-rust through its Python binding, pyiceberg-core: a row that says why it cannot write.

pyiceberg-core 0.11 binds iceberg-rust's partition transforms, its manifest readers and a DataFusion
table provider (reads), but no writer, transaction or FileIO. This writer has no operation yet; its
`unavailable()` looks at the installed binding for a write entry point and says what it found, with
the version, so every scenario records the reason and the row stays visible until upstream ships
writes. The binding runs in an environment of its own: pyiceberg 0.12 takes pyiceberg-core < 0.11.
"""

from __future__ import annotations

import inspect
import re
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from harness.engines.writers.base import Writer

BINDING = "pyiceberg_core"
DISTRIBUTION = "pyiceberg-core"
# Names a write path would go by: a writer, a transaction or commit, a FileIO to put files with.
WRITE_NAMES = re.compile(r"writ|append|insert|overwrite|upsert|delete|commit|transaction|file_?io", re.I)


class IcebergRustWriter(Writer):
    name = "iceberg-rust"
    description = "iceberg-rust's Python binding (pyiceberg-core): no write path yet, each run says why"
    single_commit = True  # an iceberg-rust transaction commits once
    libraries = (DISTRIBUTION, "pyarrow")
    environment = (f"{DISTRIBUTION}==0.11.0",)
    consumes_batches = False
    pyiceberg_commits = False

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            installed = version(DISTRIBUTION)
            binding = import_module(BINDING)
        except (PackageNotFoundError, ImportError) as exc:
            return f"{DISTRIBUTION} is not installed in the workers' environment ({exc})"
        api = public_api(binding)
        if found := [name for name in api if WRITE_NAMES.search(name.rsplit(".", 1)[-1])]:
            return (
                f"{DISTRIBUTION} {installed} exposes {', '.join(found)}, which this writer does not "
                "drive yet: give harness/engines/writers/iceberg_rust.py its operations"
            )
        return (
            f"{DISTRIBUTION} {installed} (iceberg-rust's Python binding) exposes no writer, transaction "
            f"or FileIO: only {', '.join(api)}"
        )


def public_api(binding: ModuleType) -> list[str]:
    """The binding's public names, `module.name`, with the public members of its classes."""
    names = []
    for module_name in sorted(getattr(binding, "__all__", None) or _public(binding)):
        module = getattr(binding, module_name)
        if not isinstance(module, ModuleType):
            names.append(module_name)
            continue
        for name in sorted(_public(module)):
            member = getattr(module, name)
            names.append(f"{module_name}.{name}")
            if inspect.isclass(member):
                names += [f"{module_name}.{name}.{attribute}" for attribute in sorted(_public(member))]
    return names


def _public(namespace: object) -> list[str]:
    return [name for name in dir(namespace) if not name.startswith("_")]
