#!/usr/bin/env python
"""Self-check of the REST catalog server with pyiceberg against a local moto S3.

Run: /work/main/.venv/bin/python compose/rest-catalog/smoke.py
Needs pyiceberg, pyarrow, boto3 and moto[server] (moto_server) in the same interpreter env.
Exits non-zero on the first failed check; both servers are always stopped (by PID).
"""

from __future__ import annotations

import os

os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")  # before pyarrow

import datetime as dt
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
KEY, SECRET, REGION, BUCKET = "test", "test", "us-east-1", "icebench-smoke"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"process exited early ({proc.returncode}); log:\n{log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:
            time.sleep(0.2)
    raise SystemExit(f"timeout waiting for {url}; log:\n{log.read_text()}")


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check(cond: bool, what: str) -> None:
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        raise SystemExit(f"check failed: {what}")


def main() -> None:
    if not (HERE / "build" / "classpath.txt").exists():
        subprocess.run([str(HERE / "build.sh")], check=True)
    work = Path(tempfile.mkdtemp(prefix="icebench-rest-smoke-"))
    s3_port, rest_port = free_port(), free_port()
    s3_url, rest_url = f"http://127.0.0.1:{s3_port}", f"http://127.0.0.1:{rest_port}"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    moto = rest = None
    moto_log, rest_log = work / "moto.log", work / "rest.log"
    try:
        moto = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(s3_port)],
            stdout=moto_log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_http(s3_url, moto, moto_log)
        import boto3

        boto3.client(
            "s3", endpoint_url=s3_url, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
        ).create_bucket(Bucket=BUCKET)

        t0 = time.time()
        rest = subprocess.Popen(
            [
                str(HERE / "run.sh"),
                "--port",
                str(rest_port),
                "--warehouse",
                f"s3://{BUCKET}/wh",
                "--jdbc-uri",
                f"jdbc:sqlite:{work}/catalog.db",
                "--prop",
                f"s3.endpoint={s3_url}",
                "--prop",
                "s3.path-style-access=true",
                "--prop",
                f"s3.region={REGION}",
            ],
            stdout=rest_log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_http(rest_url + "/healthz", rest, rest_log)
        print(f"servers up: moto {s3_url}, rest {rest_url} (rest start {time.time() - t0:.1f}s)")
        run_checks(rest_url, s3_url, rest_log)
        print("SMOKE OK")
    except BaseException:
        if rest_log.exists():
            print("---- rest server log (tail) ----\n" + "\n".join(rest_log.read_text().splitlines()[-40:]))
        raise
    finally:
        stop(rest)
        stop(moto)
        print(f"stopped servers (logs in {work})")


def run_checks(rest_url: str, s3_url: str, rest_log: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
    from pyiceberg.types import StringType

    props = {
        "s3.endpoint": s3_url,
        "s3.access-key-id": KEY,
        "s3.secret-access-key": SECRET,
        "s3.region": REGION,
        "s3.path-style-access": "true",
    }
    cat = load_catalog("rest", type="rest", uri=rest_url, warehouse=f"s3://{BUCKET}/wh", **props)

    cat.create_namespace("smoke")
    check(("smoke",) in cat.list_namespaces(), "create/list namespace")
    check(cat.namespace_exists("smoke") and not cat.namespace_exists("nope"), "namespace_exists (HEAD)")

    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("amount", pa.decimal128(38, 9)),
            ("ts", pa.timestamp("us", tz="UTC")),
        ]
    )

    def batch(ids: Iterable[int]) -> pa.Table:
        ids = list(ids)
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "name": pa.array([f"n{i}" for i in ids]),
                "amount": pa.array(
                    [(Decimal(i) / 7).quantize(Decimal("1e-9")) for i in ids], pa.decimal128(38, 9)
                ),
                "ts": pa.array(
                    [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i) for i in ids],
                    pa.timestamp("us", tz="UTC"),
                ),
            },
            schema=schema,
        )

    tbl = cat.create_table("smoke.t", schema=schema)
    check(cat.list_tables("smoke") == [("smoke", "t")], "create/list table")
    check(cat.table_exists("smoke.t") and not cat.table_exists("smoke.nope"), "table_exists (HEAD)")

    tbl.append(batch(range(10)))
    check(cat.load_table("smoke.t").scan().to_arrow().num_rows == 10, "append")
    tbl.overwrite(batch(range(100, 120)))
    check(
        sorted(cat.load_table("smoke.t").scan().to_arrow()["id"].to_pylist()) == list(range(100, 120)),
        "overwrite",
    )
    tbl.delete("id < 105")
    check(cat.load_table("smoke.t").scan().to_arrow().num_rows == 15, "delete")

    s3 = pafs.S3FileSystem(
        endpoint_override=s3_url, access_key=KEY, secret_key=SECRET, region=REGION, scheme="http"
    )
    path = f"{BUCKET}/external/part-0.parquet"
    pq.write_table(batch(range(200, 205)), path, filesystem=s3, store_decimal_as_integer=True)
    tbl.add_files([f"s3://{path}"])
    got = cat.load_table("smoke.t").scan().to_arrow()
    check(got.num_rows == 20 and got["amount"].type == pa.decimal128(38, 9), "add_files")

    with tbl.update_schema() as upd:
        upd.add_column("extra", StringType())
    check("extra" in cat.load_table("smoke.t").schema().column_names, "schema update (add column)")
    check(cat.load_table("smoke.t").scan().to_arrow().num_rows == 20, "read after schema update")

    # Commit conflict: both loaded at the same snapshot; the second append must see HTTP 409
    # and either be retried by pyiceberg (success) or raise CommitFailedException.
    a, b = cat.load_table("smoke.t"), cat.load_table("smoke.t")
    extra_schema = a.schema().as_arrow()
    rows = batch(range(300, 303)).append_column(pa.field("extra", pa.string()), pa.array(["x"] * 3))
    rows = rows.cast(extra_schema)
    before = rest_log.read_text().count(" 409 ")
    a.append(rows)
    conflict_outcome = "retried"
    try:
        b.append(rows)
    except CommitFailedException as e:
        conflict_outcome = f"CommitFailedException: {e}"
    time.sleep(0.2)  # log line is written after the response
    n409 = rest_log.read_text().count(" 409 ") - before
    commits_409 = [
        ln
        for ln in rest_log.read_text().splitlines()
        if re.match(r"POST /v1/namespaces/smoke/tables/t 409", ln)
    ]
    check(
        n409 >= 1 and len(commits_409) >= 1,
        f"commit conflict returned 409 ({n409}x), outcome: {conflict_outcome}",
    )
    expect = 26 if conflict_outcome == "retried" else 23
    check(
        cat.load_table("smoke.t").scan().to_arrow().num_rows == expect, f"row count after conflict = {expect}"
    )

    cat.rename_table("smoke.t", "smoke.t2")
    check(cat.list_tables("smoke") == [("smoke", "t2")], "rename table")
    check(cat.load_table("smoke.t2").scan().to_arrow().num_rows == expect, "read after rename")

    # Staged create (create_table_transaction -> stage-create + commit with assert-create).
    with cat.create_table_transaction("smoke.staged", schema=schema) as txn:
        txn.append(batch(range(3)))
    check(cat.load_table("smoke.staged").scan().to_arrow().num_rows == 3, "create_table_transaction")
    cat.drop_table("smoke.staged")

    # Nested namespace (levels joined by 0x1F in the URL).
    cat.create_namespace(("smoke", "sub"))
    check(cat.list_namespaces("smoke") == [("smoke", "sub")], "nested namespace create/list")
    cat.create_table(("smoke", "sub", "n"), schema=schema).append(batch(range(2)))
    check(cat.load_table(("smoke", "sub", "n")).scan().to_arrow().num_rows == 2, "table in nested namespace")
    cat.drop_table(("smoke", "sub", "n"))
    cat.drop_namespace(("smoke", "sub"))
    check(cat.list_views("smoke") == [], "list views")

    # Multi-table commit endpoint (not exposed by pyiceberg's API): raw HTTP.
    import json
    import urllib.error

    def post(path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        req = urllib.request.Request(
            rest_url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    uuid = str(cat.load_table("smoke.t2").metadata.table_uuid)
    ident = {"namespace": ["smoke"], "name": "t2"}
    code, _ = post(
        "/v1/transactions/commit",
        {
            "table-changes": [
                {
                    "identifier": ident,
                    "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                    "updates": [{"action": "set-properties", "updates": {"icebench.txn": "1"}}],
                }
            ]
        },
    )
    check(
        code == 204 and cat.load_table("smoke.t2").properties.get("icebench.txn") == "1",
        f"transactions/commit ok ({code})",
    )
    code, body = post(
        "/v1/transactions/commit",
        {
            "table-changes": [
                {
                    "identifier": ident,
                    "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 99}],
                    "updates": [{"action": "set-properties", "updates": {"icebench.txn": "2"}}],
                }
            ]
        },
    )
    check(
        code == 409 and cat.load_table("smoke.t2").properties.get("icebench.txn") == "1",
        f"transactions/commit conflict -> {code} {json.loads(body)['error']['type']}",
    )
    code, _ = post("/v1/namespaces", {"namespace": 5})
    check(code == 400, f"malformed request -> {code}")
    code, _ = post("/v1/nonsense", {})
    check(code == 404, f"unknown route -> {code}")

    # Purge path (server reads manifests through its FileIO and deletes files).
    import boto3

    p = cat.create_table("smoke.p", schema=schema)
    p.append(batch(range(5)))
    s3c = boto3.client(
        "s3", endpoint_url=s3_url, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )

    def keys(prefix: str) -> list[str]:
        return [o["Key"] for o in s3c.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]

    n_before = len(keys("wh/smoke/p/"))
    cat.purge_table("smoke.p")
    left = keys("wh/smoke/p/")
    check(n_before >= 4 and not left, f"purge deleted {n_before} objects (left: {left})")
    cat.drop_table("smoke.t2")
    try:
        cat.load_table("smoke.t2")
        check(False, "drop table")
    except NoSuchTableError:
        check(True, "drop table + purge table")
    cat.drop_namespace("smoke")
    check(("smoke",) not in cat.list_namespaces(), "drop namespace")


if __name__ == "__main__":
    main()
