"""Sample app: a browser page that talks AG-UI to a hosted agent, with @ag-ui/client's HttpAgent from npm.

An ordinary `AgentFunctionApp` with one agent, `support`, whose `refund_order` tool needs the caller's approval. The
agent's AG-UI route (`POST /api/agents/support/agui`) is the host's own; this file adds two ordinary HTTP routes that
serve the page (`GET /api/chat`) and its bundle (`GET /api/chat/{asset}`, built by `npm run build` in `web/`).
Run it from this folder (README.md):
`PYTHONPATH=../.. ../../.venv/bin/python -m agent_host serve --app function_app:app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import azure.functions as func
from agent_framework import Agent, tool
from azurefunctions.extensions.http.fastapi import FileResponse, JSONResponse, Request, Response

from agent_host import AgentFunctionApp, chat_client_from_settings

WEB_DIR = Path(__file__).resolve().parent / "web"
PAGE = WEB_DIR / "index.html"
DIST_DIR = WEB_DIR / "dist"
BUNDLE = DIST_DIR / "main.js"
BUILD_COMMAND = "cd web && npm ci --ignore-scripts && npm run build"
ASSET_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".map": "application/json",
}
# The page loads only its own script and style and talks only to this origin.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'",
    "Cache-Control": "no-store",
}


@tool
def order_status(order_id: Annotated[str, "The order to look up."]) -> str:
    """Look up an order (a canned sample; call your own service here)."""
    return f"Order {order_id} ships tomorrow."


@tool(approval_mode="always_require")
def refund_order(order_id: Annotated[str, "The order to refund."]) -> str:
    """Refund an order; runs only after the caller approves it (a sample; call your own service here)."""
    return f"Order {order_id} is refunded."


# Azure OpenAI, OpenAI or an OpenAI-compatible server when configured, otherwise the offline model.
client = chat_client_from_settings()
support = Agent(
    client,
    name="support",
    instructions="You help customers with their orders. Remember what they tell you. Use the tools.",
    tools=[order_status, refund_order],
    # Keep the conversation in the durable entity, not in the model service (the Responses API stores by default).
    default_options={"store": False},
)

# HTTP streams on, so the page sees the answer word by word (azurefunctions-extensions-http-fastapi): every HTTP
# function of the app then takes FastAPI's request type, the two below included.
app = AgentFunctionApp(agents=[support], http_streams=True)


def error(status: int, code: str, message: str) -> JSONResponse:
    """An error in the body every agent-host route answers with."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def page_not_built() -> JSONResponse:
    return error(503, "page_not_built", f"The page is not built yet: run `{BUILD_COMMAND}` in samples/agui_web.")


def built_assets() -> dict[str, Path]:
    """The bundle's files by name; only these are served, so no request names a path outside the folder."""
    return {path.name: path for path in DIST_DIR.iterdir() if path.is_file() and path.suffix in ASSET_TYPES}


# The page and its bundle hold no data and no key (the page asks for the key), so they need none.
@app.route(route="chat", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def chat_page(req: Request) -> Response:
    """The chat page, once its bundle is built."""
    if not BUNDLE.is_file():
        return page_not_built()
    return FileResponse(PAGE, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@app.route(route="chat/{asset}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def chat_asset(req: Request) -> Response:
    """One file of the page's bundle (web/dist), by its name."""
    if not BUNDLE.is_file():
        return page_not_built()
    name = str(req.path_params.get("asset", ""))
    path = built_assets().get(name)
    if path is None:
        return error(404, "asset_not_found", f"The page has no asset {name!r}; it has {sorted(built_assets())}.")
    return FileResponse(path, media_type=ASSET_TYPES[path.suffix], headers={"Cache-Control": "no-cache"})
