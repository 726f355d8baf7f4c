"""Index a function app folder with the real Python worker code (`azure-functions-runtime`) and print the result.

Usage: `python worker_indexing.py APP_DIR [PATH...]`. Runs in its own process, as the worker does: it imports
`function_app` from APP_DIR, indexes it with the worker's loader and registry (the same validation that raises
`FunctionLoadError` on the Functions host, including the request and response types HTTP streams require), and
prints one JSON document with what it would send the host and whether it would serve HTTP streams.
The worker normally gets its gRPC message classes from the host; the three it touches here are stood in for
by plain classes with the same enum values.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


class BindingInfo:
    """Stand-in for the host's `BindingInfo` message: the enum values the worker compares against."""

    in_ = 0
    out = 1
    inout = 2
    undefined = 0
    string = 1
    binary = 2
    stream = 3

    def __init__(self, **fields: Any) -> None:
        self.fields = fields


class RpcFunctionMetadata:
    """Stand-in for the host's `RpcFunctionMetadata` message: keeps the fields it was given."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields


class Protos:
    """The message classes the worker's loader uses."""

    BindingInfo = BindingInfo
    RpcFunctionMetadata = RpcFunctionMetadata


def main(app_dir: str, *paths: str) -> int:
    """Index APP_DIR/function_app.py (importing also from `paths`) and print whether HTTP streams are on, and each
    function's name, raw bindings and the worker's view of it (the Python type its request parameter gets)."""
    sys.path[:0] = [app_dir, *paths]
    from azure_functions_runtime import loader
    from azure_functions_runtime.bindings import meta
    from azure_functions_runtime.functions import Registry
    from azure_functions_runtime.http_v2 import HttpV2Registry

    meta.load_binding_registry()
    registry = Registry()
    indexed = loader.index_function_app(str(Path(app_dir) / "function_app.py"))
    results, _ = loader.process_indexed_function(Protos, registry, indexed, app_dir)
    infos = {info.name: info for info in registry._functions.values()}
    functions = []
    for result in results:
        info = infos[result.fields["name"]]
        trigger = info.trigger_metadata.get("param_name") if info.is_http_func else None
        request_type = info.input_types[trigger].pytype if trigger else None
        functions.append(
            {
                "name": result.fields["name"],
                "rawBindings": [json.loads(raw) for raw in result.fields["raw_bindings"]],
                "isHttp": info.is_http_func,
                "inputs": {name: t.binding_name for name, t in info.input_types.items()},
                "requestType": f"{request_type.__module__}.{request_type.__qualname__}" if request_type else None,
            }
        )
    print(json.dumps({"httpStreams": HttpV2Registry.http_v2_enabled(), "functions": functions}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
