"""Credentials out of everything the store writes or says: rows, messages and printed commands.

Why here: a store URI may carry keys (``s3://KEY:SECRET@bucket``), and any text column or error
message may echo one. Every writer and every message of the store goes through :func:`scrub`; the
hints printed for the user go through :func:`runnable_uri`, which cuts secrets out instead of
masking them, so that the command shown can be run as is.
"""

from __future__ import annotations

import re
from typing import overload

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@]+@")
_SECRET_PARAM = re.compile(
    r"(?i)(?P<key>\b(?:aws_access_key_id|aws_secret_access_key|aws_session_token|access_key(?:_id)?"
    r"|secret_key|secret_access_key|session_token|password|passwd|token))(?P<sep>\s*(?:=|:(?!-))\s*[\"']?)"
    r"[^\s&\"',;]+"
)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")


@overload
def scrub(text: str) -> str: ...
@overload
def scrub(text: None) -> None: ...
def scrub(text: str | None) -> str | None:
    """``text`` with anything that looks like a credential replaced by ``***``.

    Covers URIs with userinfo (``s3://KEY:SECRET@bucket``), ``key=value`` pairs for the usual
    secret names (also as URI query parameters) and bare AWS access key ids.
    """
    if text is None:
        return None
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    text = _SECRET_PARAM.sub(r"\g<key>\g<sep>***", text)
    return _AWS_KEY_ID.sub("***", text)


def runnable_uri(uri: str) -> tuple[str, bool]:
    """``uri`` as a command line can take it, with any credentials cut out (not masked: a masked
    ``s3://***@bucket`` cannot be run), and whether some were there (say where they come from)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    if "://" not in uri:
        return scrub(uri), scrub(uri) != uri
    parts = urlsplit(uri)
    netloc = parts.netloc.rpartition("@")[2]
    query = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if scrub(f"{k}={v}") == f"{k}={v}"
    ]
    clean = urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe=":/"), parts.fragment))
    return scrub(clean), clean != uri
