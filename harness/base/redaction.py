"""Credentials out of everything the harness writes or prints: URIs with a password, and secret
query parameters (`?token=`, pre-signed URL signatures)."""

from __future__ import annotations

import re

MASK = "***"
# scheme://user:password@host -> scheme://user:***@host
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][\w+.-]*://[^:/@\s\"']*):(?P<secret>[^@/\s\"']+)@")
_SECRET_PARAMETER = re.compile(
    r"(?i)(?P<head>[?&](?:token|access_token|password|secret|credential|client_secret|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|signature|sig)=)(?P<secret>[^&\s\"']+)"
)


def redact(text: str) -> str:
    """`text` with every URI password and secret query value replaced by ***."""
    text = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    return _SECRET_PARAMETER.sub(lambda m: f"{m['head']}{MASK}", text)


def has_credentials(uri: str) -> bool:
    return redact(uri) != uri
