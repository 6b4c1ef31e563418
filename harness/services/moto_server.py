"""moto's S3 server, locked down: `python -m harness.services.moto_server -H 127.0.0.1 -p PORT`.

moto's own `moto.server` accepts any key (it checks no signature by default) and serves its
control API (`/moto-api/reset` wipes every bucket) to anyone who can connect. This one:
- enforces moto's IAM authentication from the very first request: the one key pair in this
  process's environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) belongs to an IAM user
  allowed `s3:*`; any other key gets 403 InvalidAccessKeyId, a wrong secret 403
  SignatureDoesNotMatch;
- refuses unsigned requests with 403 itself (moto's IAM check would fail on them with a 500);
- answers 404 for everything under `/moto-api`.
The keys come from the environment, never from argv (which `ps` shows). Should a moto upgrade
change the IAM internals `admit_only` uses, the server fails to start: it never runs open.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

CONTROL_API_PREFIX = "/moto-api"  # moto routes every path starting so to its control API
USER_NAME = "icebench"
S3_ONLY_POLICY = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
)

UNSIGNED_REFUSAL = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Anonymous access is not allowed on this server</Message></Error>"
)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def guarded(app: WsgiApp) -> WsgiApp:
    """`app`, but 404 for moto's control API (reset, state dumps, auth switches) and 403 for any
    request without a SigV4 Authorization header (presigned URLs are not used here)."""

    def answer(
        status: str, content_type: str, body: bytes, start_response: Callable[..., Any]
    ) -> list[bytes]:
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))])
        return [body]

    def guarded_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        # The same test moto's dispatcher applies to route a request to its control API.
        if environ.get("PATH_INFO", "").startswith(CONTROL_API_PREFIX):
            return answer("404 Not Found", "text/plain", b"Not Found", start_response)
        if not environ.get("HTTP_AUTHORIZATION"):
            return answer("403 Forbidden", "application/xml", UNSIGNED_REFUSAL, start_response)
        return app(environ, start_response)

    return guarded_app


def admit_only(access_key_id: str, secret_access_key: str) -> None:
    """Makes the given key pair moto's only IAM user key (allowed s3:*) and turns IAM checks on
    for every request from now on."""
    from moto import settings
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.iam.models import iam_backends

    iam = iam_backends[DEFAULT_ACCOUNT_ID]["aws"]
    iam.create_user(region_name="us-east-1", user_name=USER_NAME)
    iam.put_user_policy(USER_NAME, "s3-only", S3_ONLY_POLICY)
    # moto generates its own key; re-key it with ours, so the harness chooses the pair and never
    # has to read a secret back from this process.
    key = iam.create_access_key(USER_NAME)
    del iam.access_keys[key.access_key_id]
    key.access_key_id, key.secret_access_key = access_key_id, secret_access_key
    iam.access_keys[access_key_id] = key
    # moto counts requests against this allowance before it starts checking; none are free here.
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    access_key_id = os.environ.get("AWS_ACCESS_KEY_ID", "")
    secret_access_key = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not access_key_id or not secret_access_key:
        sys.exit("moto_server: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the only key admitted)")

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    admit_only(access_key_id, secret_access_key)
    app = guarded(DomainDispatcherApplication(create_backend_app))
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
