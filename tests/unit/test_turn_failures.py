"""What a failed turn says about why, with the detail setting on: the kind of failure, and no secret."""

from __future__ import annotations

import pytest
from agent_framework.exceptions import ChatClientContentFilterException, ChatClientException, ToolExecutionException

from agent_host._conversation.turn_failures import describe_failure, redact

SECRET_SETTINGS = {
    "OPENAI_API_KEY": "sk-proj-AbCdEf0123456789xyz",
    "AZURE_OPENAI_API_KEY": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleQ==;Suffix=x",
    "AGENT_HOST_FUNCTION_KEY": "fn-key-not-shaped-like-anything",
    "OPENAI_CHAT_MODEL": "gpt-4o-mini",  # not a secret: stays
}


class StatusError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status


def model_error(inner: BaseException) -> Exception:
    """Core's model-call error raised from `inner`, as a chat client wraps what its transport raised."""
    try:
        try:
            raise inner
        except BaseException as exc:
            raise ChatClientException("service failed to complete the prompt") from exc
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    "leak",
    [
        "the key sk-proj-AbCdEf0123456789xyz was refused",
        "header Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
        "request headers {'api-key': '0f1e2d3c4b5a69788796a5b4c3d2e1f0'}",
        "x-functions-key=fn-key-not-shaped-like-anything",
        "could not open DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleQ==;Suffix=x",
        "AccountKey=AnotherKeyNotInSettings1234== rejected",
        "https://user:hunter2@proxy.example:8080 refused",
        "redis://:hunter2pass@cache:6379/0 unreachable",
        "token=abc.def.ghi&sig=Zm9vYmFy",
        "key 4f3c2b1a0f9e8d7c6b5a49382716af0e1d2c3b4a failed",
        "storage key AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIj+/== bad",
    ],
)
def test_no_secret_survives_redaction(leak: str) -> None:
    redacted = redact(leak, SECRET_SETTINGS)

    assert "[redacted]" in redacted
    for secret in (
        "sk-proj",
        "eyJ",
        "0f1e2d3c",
        "fn-key-not",
        "c2VjcmV0",
        "AnotherKey",
        "hunter2",
        "abc.def",
        "Zm9vYmFy",
        "4f3c2b1a",
        "AbCdEfGhIj",
    ):
        assert secret not in redacted


def test_what_is_not_a_secret_stays_readable() -> None:
    text = "model gpt-4o-mini at /work/site-packages/agent_framework/_clients.py line 42, request 3fa85f64-5717-4562"

    assert redact(text, SECRET_SETTINGS) == text


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (model_error(ConnectionRefusedError(111, "Connection refused")),
         "the model server could not be reached (ConnectionRefusedError: [Errno 111] Connection refused)"),
        (model_error(TimeoutError("read timed out")),
         "the model server did not answer in time (TimeoutError: read timed out)"),
        (model_error(StatusError(401, "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz")),
         "the model server refused the credentials (HTTP 401) (StatusError: Incorrect API key provided: [redacted])"),
        (model_error(StatusError(404, "The API deployment for this resource does not exist")),
         "the model server does not know the model or deployment asked for (HTTP 404) (StatusError: The API "
         "deployment for this resource does not exist)"),
        (model_error(StatusError(429, "Rate limit reached")),
         "the model server is limiting the rate of requests (HTTP 429); retry later (StatusError: Rate limit reached)"),
        (model_error(StatusError(503, "busy")),
         "the model server failed (HTTP 503) (StatusError: busy)"),
        (ChatClientContentFilterException("blocked by the content filter"),
         "the model's content filter refused the request (ChatClientContentFilterException: blocked by the content "
         "filter)"),
        (ToolExecutionException("lookup_order raised KeyError: 'A17'"),
         "a tool failed (ToolExecutionException: lookup_order raised KeyError: 'A17')"),
        (ConnectionResetError("database connection reset"),
         "a service the agent called could not be reached (ConnectionResetError: database connection reset)"),
        (RuntimeError("boom\nsecond line"), "the agent run raised (RuntimeError: boom second line)"),
        (KeyError(), "the agent run raised (KeyError)"),
    ],
)  # fmt: skip
def test_the_kind_of_failure_is_named_with_the_innermost_exception(error: Exception, kind: str) -> None:
    assert describe_failure(error, SECRET_SETTINGS) == kind


def test_a_long_detail_is_cut() -> None:
    assert len(describe_failure(RuntimeError("x " * 1000), {})) < 400
