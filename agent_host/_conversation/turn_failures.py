"""Why a turn failed, in words a developer can act on: what kind of failure (the model server refused, timed out,
could not be reached...) and the exception's own text, with every secret it might hold taken out.

Used only when `AGENT_HOST_TURN_ERROR_DETAILS` is on (under `serve`); otherwise a failed turn names the exception's
type alone and the details stay in the log. Knows exception chains and secret shapes, nothing of HTTP or state.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from agent_framework.exceptions import ChatClientContentFilterException, ChatClientException, ToolException

REDACTED = "[redacted]"
MAX_DETAIL_CHARACTERS = 300
_MIN_SECRET_CHARACTERS = 8
# Settings whose values are secrets: keys, tokens, passwords, connection strings (AzureWebJobsStorage is one).
_SECRET_SETTING = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CONNECTION|SAS|CREDENTIAL|AzureWebJobsStorage", re.I)
_SECRET_SHAPES = [
    # A header or field that carries a credential, in whatever quoting it is printed: keep the name, drop the value.
    (
        re.compile(
            r"""(?i)\b(authorization|proxy-authorization|x-functions-key|api[-_]?key|x-api-key|ocp-apim-subscription-key)"""
            r"""(["']?\s*[:=]\s*["']?)(?:bearer\s+|basic\s+)?[^\s"',;}]+"""
        ),
        rf"\1\2{REDACTED}",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    # Connection-string and query parts: AccountKey=..., SharedAccessSignature=..., Password=..., sig=..., code=...
    (
        re.compile(
            r"(?i)\b(AccountKey|SharedAccessKey|SharedAccessSignature|Password|Pwd|sig|code|key|token|secret)=[^;&\s\"']+"
        ),
        rf"\1={REDACTED}",
    ),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]*:[^/\s@]+@", re.I), rf"\1{REDACTED}@"),  # user:password@ in URLs
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),  # OpenAI keys
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), REDACTED),  # JWTs (Entra ID tokens)
    (re.compile(r"\b[A-Fa-f0-9]{32,}\b"), REDACTED),  # hex keys (Azure OpenAI, Cognitive Services)
    # Long base64 keys (storage account keys, new-style Azure keys): mixed case and digits, unlike paths and words.
    (
        re.compile(r"(?=[A-Za-z0-9+/]*[0-9])(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])\b[A-Za-z0-9+/]{40,}={0,2}"),
        REDACTED,
    ),
]


def describe_failure(exc: BaseException, environ: Mapping[str, str] | None = None) -> str:
    """What failed and the innermost exception's text, without secrets: `the model server could not be reached
    (ConnectError: [Errno 111] Connection refused)`.

    Args:
        exc: What the agent run raised.
        environ: Where secret settings are read from, to take their values out wherever they appear; `os.environ`.
    """
    chain = exception_chain(exc)
    root = chain[-1]
    text = " ".join(str(root).split())
    detail = f"{type(root).__name__}: {text}" if text else type(root).__name__
    return f"{_kind(chain)} ({redact(detail, environ)[:MAX_DETAIL_CHARACTERS]})"


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first (explicit causes, else the exception being handled)."""
    chain = [exc]
    while len(chain) < 10:
        current = chain[-1]
        cause = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if cause is None or cause in chain:
            break
        chain.append(cause)
    return chain


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with the values of secret settings and anything shaped like a credential replaced by `[redacted]`."""
    env = os.environ if environ is None else environ
    secrets = sorted(
        (value for name, value in env.items() if _SECRET_SETTING.search(name) and len(value) >= _MIN_SECRET_CHARACTERS),
        key=len,
        reverse=True,  # a longer secret first, so one holding another (a connection string and its key) goes whole
    )
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    for shape, replacement in _SECRET_SHAPES:
        text = shape.sub(replacement, text)
    return text


def _kind(chain: list[BaseException]) -> str:
    """The kind of failure, from the first exception in the chain that says."""
    model = any(isinstance(e, ChatClientException) or _module(e) in _MODEL_CLIENT_MODULES for e in chain)
    subject = "the model server" if model else "a service the agent called"
    for e in chain:
        names = {cls.__name__ for cls in type(e).__mro__}
        status = _status_code(e)
        if isinstance(e, ChatClientContentFilterException) or any("ContentFilter" in name for name in names):
            return "the model's content filter refused the request"
        if status is not None:
            return _status_kind(subject, status)
        if isinstance(e, TimeoutError) or any("Timeout" in name for name in names):
            return f"{subject} did not answer in time"
        if isinstance(e, ConnectionError) or any("Connect" in name for name in names):
            return f"{subject} could not be reached"
        if isinstance(e, ToolException):
            return "a tool failed"
    return "the agent run raised"


_MODEL_CLIENT_MODULES = frozenset({"openai", "agent_framework_openai", "httpx", "httpcore", "httpx2", "httpcore2"})


def _module(exc: BaseException) -> str:
    return type(exc).__module__.split(".", 1)[0]


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status an error carries (openai's and azure-core's errors do), if any."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and 100 <= status <= 599:
            return status
    return None


def _status_kind(subject: str, status: int) -> str:
    if status in (401, 403):
        return f"{subject} refused the credentials (HTTP {status})"
    if status == 404:
        return f"{subject} does not know the model or deployment asked for (HTTP 404)"
    if status == 429:
        return f"{subject} is limiting the rate of requests (HTTP 429); retry later"
    if status >= 500:
        return f"{subject} failed (HTTP {status})"
    return f"{subject} refused the request (HTTP {status})"
