"""Contract: the function metadata the worker sends the Functions host is what the host and Durable extension accept.

Checked for the template app and for an app with two agents: names, binding types and directions, routes,
methods, auth levels and entity names, plus the worker's own rule that every parameter is a declared binding.
"""

from __future__ import annotations

import inspect
import re
import typing

import azure.functions as func
import pytest
from apps import build_app, make_agent
from azurefunctions.extensions.base import RequestTrackerMeta, ResponseTrackerMeta
from chat_clients import ScriptedChatClient
from worker_metadata import IndexedApp, index, load_template_module, offline_environment, template_app

from agent_host._app import entity_name_for
from agent_host._local_host.direct_invoker import DirectInvoker
from agent_host._local_host.functions import discover_functions

# The host's function name rule (ScriptHost.ValidateName), applied case-insensitively.
FUNCTION_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,127}$")
ALL_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
CONVERSATION = "agents/{agent}/conversations/{conversationId}"
DOCUMENTED_ROUTES = {
    "api_health": "health",
    "api_turns": f"{CONVERSATION}/turns",
    "api_turn": f"{CONVERSATION}/turns/{{turnId}}",
    "api_conversation": CONVERSATION,
    "api_messages": f"{CONVERSATION}/messages",
}


def two_agent_app(**kwargs: typing.Any) -> IndexedApp:
    app = build_app(
        make_agent(ScriptedChatClient(), "Support"), make_agent(ScriptedChatClient(), "billing-v2"), **kwargs
    )
    return IndexedApp(app, index(app))


@pytest.fixture(params=["template", "two_agents"])
def indexed(request: pytest.FixtureRequest) -> IndexedApp:
    return template_app() if request.param == "template" else two_agent_app()


def normalised(route: str) -> str:
    """A route as the router compares it: no outer slashes, case-insensitive, parameter names erased."""
    return re.sub(r"\{[^}]*\}", "{}", route.strip("/").lower())


def test_function_names_are_valid_and_unique_ignoring_case(indexed: IndexedApp) -> None:
    names = [f.name for f in indexed.functions]

    assert [name for name in names if not FUNCTION_NAME.match(name)] == []
    assert len({name.lower() for name in names}) == len(names)


def test_documented_routes_are_registered_with_their_templates(indexed: IndexedApp) -> None:
    routes = {f.name: f.trigger["route"] for f in indexed.http}

    assert {name: routes.get(name) for name in DOCUMENTED_ROUTES} == DOCUMENTED_ROUTES


def test_every_http_function_has_request_in_and_response_out_bindings(indexed: IndexedApp) -> None:
    for function in indexed.http:
        trigger = function.trigger
        outputs = function.bindings_of_type("http")

        assert (trigger["name"], str(trigger["direction"]).upper()) == ("req", "IN"), function.name
        assert [(o["name"], str(o["direction"]).upper()) for o in outputs] == [("$return", "OUT")], function.name
        # Every method is registered on purpose: a wrong one reaches our handler and gets a JSON 405.
        assert set(trigger["methods"]) == ALL_METHODS, function.name


def test_health_is_anonymous_and_every_other_route_needs_a_function_key(indexed: IndexedApp) -> None:
    levels = {f.name: str(f.trigger["authLevel"]).lower() for f in indexed.http}

    assert levels.pop("api_health") == "anonymous"
    assert set(levels.values()) == {"function"}


@pytest.mark.parametrize("level", [func.AuthLevel.ANONYMOUS, func.AuthLevel.ADMIN])
def test_http_auth_level_applies_to_every_route_but_health(level: func.AuthLevel) -> None:
    indexed = two_agent_app(http_auth_level=level)

    levels = {f.name: str(f.trigger["authLevel"]).lower() for f in indexed.http}

    assert levels.pop("api_health") == "anonymous"
    assert set(levels.values()) == {level.value}


def test_routes_that_talk_to_entities_get_the_default_task_hub_client(indexed: IndexedApp) -> None:
    for function in indexed.http:
        clients = function.bindings_of_type("durableClient")

        if function.name in ("api_health", "api_openai_models", "api_openai_model"):  # they list agents only
            assert clients == []
            continue
        # No taskHub or connection in the binding: host.json's hubName (%TASKHUB_NAME%) and AzureWebJobsStorage apply.
        assert clients == [{"direction": "IN", "type": "durableClient", "name": "client"}], function.name


def test_one_entity_per_agent_named_in_lower_case_as_the_routes_signal_it(indexed: IndexedApp) -> None:
    agent_names = sorted(indexed.app.agents)
    signalled = {name: route.entity_name for name, route in indexed.app._agent_routes.items()}

    entities = {f.name: f.bindings for f in indexed.entities}

    assert entities == {
        entity_name_for(name): (
            {"direction": "IN", "type": "entityTrigger", "name": "context", "entityName": entity_name_for(name)},
        )
        for name in agent_names
    }
    assert all(name == name.lower() for name in entities)
    assert signalled == {name: entity_name_for(name) for name in agent_names}
    # Besides routes and entities, only idle expiry's orchestrator and activity (tests/expiry checks their bindings).
    others = {f.name for f in indexed.functions} - {f.name for f in [*indexed.http, *indexed.entities]}
    assert others == {"expiry_conversation", "expiry_watch"}


def test_two_agents_share_the_routes_and_get_distinct_entities() -> None:
    indexed = two_agent_app()

    assert sorted(f.name for f in indexed.entities) == ["conversation_billing-v2", "conversation_support"]
    assert {f.name for f in indexed.http} == {f.name for f in template_app().http}


def test_routes_do_not_collide_once_parameters_are_normalised(indexed: IndexedApp) -> None:
    routes = [normalised(f.trigger["route"]) for f in indexed.http]

    assert len(set(routes)) == len(routes), sorted(routes)


def test_the_collision_check_catches_a_route_that_differs_only_in_parameter_names() -> None:
    app = build_app(make_agent(ScriptedChatClient(), "assistant"))

    @app.function_name("shadow")
    @app.route(route="Agents/{name}/conversations/{id}/", methods=["GET"])
    def shadow(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("shadow")

    routes = [normalised(f.trigger["route"]) for f in index(app) if f.trigger["type"] == "httpTrigger"]

    assert len(set(routes)) == len(routes) - 1


def test_routes_stay_out_of_the_hosts_reserved_space(indexed: IndexedApp) -> None:
    for function in indexed.http:
        route = function.trigger["route"]

        assert route == route.strip("/"), function.name
        # The host refuses any route starting with "admin"; "runtime/webhooks" is where the Durable extension lives.
        assert not route.lower().startswith(("admin", "runtime/webhooks")), function.name


def test_local_host_serves_exactly_the_routes_the_host_is_sent(indexed: IndexedApp) -> None:
    functions = [f.function for f in indexed.functions]
    routes, entities = discover_functions(functions, DirectInvoker(functions, why="to list the routes"))

    served = {r.function_name: (r.route.template, set(r.methods or ()), r.auth_level) for r in routes}
    sent = {
        f.name: (f.trigger["route"], set(f.trigger["methods"]), str(f.trigger["authLevel"]).lower())
        for f in indexed.http
    }
    assert served == sent
    assert sorted(entities) == sorted(f.trigger["entityName"] for f in indexed.entities)


def accepted_input(app: object, binding_type: str, annotation: object) -> bool:
    """The worker's check of a parameter's annotation: with HTTP streams on, the HTTP request's is checked against
    the web extension's request type instead of the binding's converter (azure_functions_runtime bindings/meta.py)."""
    if getattr(app, "http_streams", False) and binding_type == "httpTrigger":
        return RequestTrackerMeta.check_type(annotation)
    return func.get_binding_registry().get(binding_type).check_input_type_annotation(annotation)


def accepted_output(app: object, annotation: object) -> bool:
    """The worker's check of an HTTP function's return annotation, the same way."""
    if getattr(app, "http_streams", False):
        return ResponseTrackerMeta.check_type(annotation)
    return func.get_binding_registry().get("http").check_output_type_annotation(annotation)


def test_every_parameter_is_a_declared_binding_with_an_accepted_annotation(indexed: IndexedApp) -> None:
    registry = func.get_binding_registry()
    for function in indexed.functions:
        user_function = function.user_function
        parameters = set(inspect.signature(user_function).parameters)
        bound = {b["name"]: b["type"] for b in function.bindings if b["name"] != "$return"}
        hints = typing.get_type_hints(user_function)

        # The worker refuses a function whose parameters and bindings differ (FunctionLoadError at indexing).
        assert parameters == set(bound), function.name
        for name, binding_type in bound.items():
            annotation = hints.get(name)
            converter = registry.get(binding_type)
            if annotation is None or (annotation in (str, bytes) and not converter.has_implicit_output()):
                continue
            assert accepted_input(indexed.app, binding_type, annotation), (function.name, name, annotation)
        if "return" in hints and function.bindings_of_type("http"):
            assert accepted_output(indexed.app, hints["return"]), function.name


def test_the_template_serves_http_streams_and_the_check_refuses_the_classic_shape_there() -> None:
    # With HTTP streams on, the worker refuses an HTTP function taking azure.functions.HttpRequest: the check above
    # would too.
    app = template_app().app

    assert app.http_streams is True
    assert not accepted_input(app, "httpTrigger", func.HttpRequest)
    assert not accepted_output(app, func.HttpResponse)


def test_the_template_module_defines_exactly_one_function_app() -> None:
    with offline_environment():
        module = load_template_module()

    registers = [name for name, value in vars(module).items() if isinstance(value, func.FunctionRegister)]

    # The worker scans function_app.py's globals and refuses more than one FunctionApp-like object.
    assert registers == ["app"]


@pytest.mark.parametrize("agent_name", ["turns", "messages", "health", "run"])
def test_an_agent_named_like_a_route_gets_its_own_unique_functions(agent_name: str) -> None:
    app = build_app(make_agent(ScriptedChatClient(), agent_name))

    names = [function.get_function_name() for function in app.get_functions()]

    assert len(names) == len(set(names))
    assert f"conversation_{agent_name}" in names
