"""The local host's route templates: literal segments and {name} parameters match; any other syntax is refused."""

from __future__ import annotations

import pathlib

import azure.durable_functions as df
import azure.functions as func
import pytest

from agent_host._app import CONVERSATION_ROUTE
from agent_host._local_host import LocalHost
from agent_host._local_host.route_template import RouteTemplate, split_path


def test_a_template_of_the_app_matches_its_own_paths_and_nothing_longer_or_shorter() -> None:
    template = RouteTemplate(f"{CONVERSATION_ROUTE}/turns/{{turnId}}")

    assert template.match(["agents", "assistant", "conversations", "c1", "turns", "t1"]) == {
        "agent": "assistant",
        "conversationId": "c1",
        "turnId": "t1",
    }
    assert template.match(["Agents", "a", "CONVERSATIONS", "c", "Turns", "t"]) is not None  # literals ignore case
    assert template.match(["agents", "assistant", "conversations", "c1", "turns"]) is None
    assert template.match(["agents", "assistant", "conversations", "c1", "turns", "t1", "x"]) is None
    assert template.match(["agents", "", "conversations", "c1", "turns", "t1"]) is None  # a parameter is never empty


def test_literal_segments_rank_before_parameters() -> None:
    literal, parameter = RouteTemplate("echo/fixed/{rest}"), RouteTemplate("echo/{first}/{rest}")

    assert literal.rank < parameter.rank
    assert literal.match(["echo", "fixed", "x"]) == {"rest": "x"}
    assert parameter.match(["echo", "fixed", "x"]) == {"first": "fixed", "rest": "x"}


def test_an_optional_parameter_matches_with_and_without_its_segment_as_the_functions_host_does() -> None:
    template = RouteTemplate("files/{folder}/{name?}")

    assert template.match(["files", "docs", "a.txt"]) == {"folder": "docs", "name": "a.txt"}
    assert template.match(["files", "docs"]) == {"folder": "docs"}
    assert template.match(["files"]) is None
    assert template.match(["files", "docs", "a.txt", "more"]) is None


def test_an_optional_parameter_before_a_required_segment_is_refused() -> None:
    with pytest.raises(ValueError, match="may only be followed by optional parameters"):
        RouteTemplate("files/{name?}/raw")


def test_paths_are_split_into_decoded_segments() -> None:
    assert split_path("/api/a%2Fb/c%0Ad/") == ["api", "a/b", "c\nd"]
    assert split_path("/") == []


@pytest.mark.parametrize(
    "segment",
    ["{mode=auto}", "{id:int}", "{*rest}", "file.{ext}", "{a}{b}", "{}", "{1x}", "x}", "{a?}x"],
    ids=[
        "default",
        "constraint",
        "catch-all",
        "mixed",
        "two-parameters",
        "empty",
        "bad-name",
        "brace",
        "optional-text",
    ],
)
def test_syntax_the_app_never_uses_is_refused_with_the_function_named(tmp_path: pathlib.Path, segment: str) -> None:
    app = df.DFApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.function_name("odd")
    @app.route(route=f"things/{segment}", methods=["GET"])
    def odd(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("odd")

    with pytest.raises(ValueError, match=r"Function 'odd': Route template .* does not support the segment") as raised:
        LocalHost(app, state_dir=tmp_path, port=0)

    assert repr(segment) in str(raised.value) and "func start" in str(raised.value)
