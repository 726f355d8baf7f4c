"""The routes of a hosted agent that run on the conversation client seam alone: its conversations, `/run`, AG-UI and
the OpenAI Responses API, and the list of its conversations (on a host's entity query). Every host that has the seam
serves them (the function app, the standalone worker's ASGI app); routes that need the Functions durable client
itself (workflows, the inspector) are declared by the function app. Knows the routes' paths and handlers, not how a
host serves them.
"""

from __future__ import annotations

from .conversation_list import ConversationListRoute
from .openai_responses import OpenAIResponsesRoutes, render_openai_error
from .route_table import HttpRoute
from .routes import Routes

CONVERSATION_ROUTE = "agents/{agent}/conversations/{conversationId}"


def conversation_routes(conversations: Routes) -> list[HttpRoute]:
    """A conversation's routes (turns, cancel, stream, reads, delete, retention), `/run` and AG-UI."""
    conversation = CONVERSATION_ROUTE
    return [
        HttpRoute("api_turns", f"{conversation}/turns", {"POST": conversations.post_turn}),
        HttpRoute("api_turn", f"{conversation}/turns/{{turnId}}", {"GET": conversations.get_turn}),
        HttpRoute("api_turn_cancel", f"{conversation}/turns/{{turnId}}/cancel", {"POST": conversations.cancel_turn}),
        HttpRoute("api_turn_stream", f"{conversation}/turns/{{turnId}}/stream", {"GET": conversations.get_turn_stream}),
        HttpRoute(
            "api_conversation",
            conversation,
            {"GET": conversations.get_conversation, "DELETE": conversations.delete_conversation},
        ),
        HttpRoute("api_messages", f"{conversation}/messages", {"GET": conversations.get_messages}),
        HttpRoute("api_retention", f"{conversation}/retention", {"PUT": conversations.put_retention}),
        HttpRoute("api_run", "agents/{agent}/run", {"POST": conversations.run}),
        HttpRoute("api_agui", "agents/{agent}/agui", {"POST": conversations.agui}),
    ]


def conversation_list_route(listing: ConversationListRoute) -> HttpRoute:
    """`GET agents/{agent}/conversations`: an agent's conversations, a page at a time."""
    return HttpRoute("api_conversations", "agents/{agent}/conversations", {"GET": listing.conversations})


def openai_routes(openai: OpenAIResponsesRoutes) -> list[HttpRoute]:
    """The OpenAI Responses API's routes under `openai/v1`, each rendering errors in that API's shape."""
    return [
        HttpRoute(name, f"openai/v1/{path}", methods, client=client, render_error=render_openai_error)
        for name, path, methods, client in (
            ("api_openai_responses", "responses", {"POST": openai.create}, True),
            ("api_openai_response", "responses/{responseId}", {"GET": openai.retrieve}, True),
            ("api_openai_models", "models", {"GET": openai.models}, False),
            ("api_openai_model", "models/{model}", {"GET": openai.model}, False),
        )
    ]
