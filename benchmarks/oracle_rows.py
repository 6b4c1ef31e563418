"""The oracle's read-back against the rows (issue 39: its memory must stay flat, its time linear):
each generated set given (e.g. the data cache's wide, wide-3M and wide-10M base sets) made a table
of its own files as they are (add_files: nothing copied), each read back (read_content) in a
process of its own, with its resident peak (VmHWM) and time:

    .venv/bin/python benchmarks/oracle_rows.py DIR SET [SET ...]

DIR holds the catalogs and the warehouses (made on first use). Run it from another checkout to
measure that checkout's oracle on the same tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from readback_row_groups import READ_BACK, table_of

from generators.manifest import DatasetManifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("sets", type=Path, nargs="+")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    for folder in args.sets:
        manifest = DatasetManifest.load(folder)
        files = [Path(path) for path in manifest.file_paths(folder)]
        name = f"{folder.parent.name}/{folder.name}"
        uri, warehouse = table_of(args.root.resolve(), name.replace("-", "_").replace("/", "_"), files)
        done = subprocess.run(
            [sys.executable, "-c", READ_BACK, uri, warehouse], capture_output=True, text=True, check=True
        )
        print(json.dumps({"set": name, **json.loads(done.stdout)}), flush=True)


if __name__ == "__main__":
    main()
