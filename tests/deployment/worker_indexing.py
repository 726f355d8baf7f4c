"""Index a function app folder with the real Python worker code (`azure-functions-runtime`) and print the result.

Usage: `python worker_indexing.py APP_DIR`. Runs in its own process, as the worker does: it imports
`function_app` from APP_DIR, indexes it with the worker's loader and registry (the same validation that raises
`FunctionLoadError` on the Functions host), and prints one JSON document with what it would send the host.
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


def main(app_dir: str) -> int:
    """Index APP_DIR/function_app.py and print names, raw bindings and the worker's view of each function."""
    sys.path.insert(0, app_dir)
    from azure_functions_runtime import loader
    from azure_functions_runtime.bindings import meta
    from azure_functions_runtime.functions import Registry

    meta.load_binding_registry()
    registry = Registry()
    indexed = loader.index_function_app(str(Path(app_dir) / "function_app.py"))
    results, _ = loader.process_indexed_function(Protos, registry, indexed, app_dir)
    infos = {info.name: info for info in registry._functions.values()}
    report = [
        {
            "name": result.fields["name"],
            "rawBindings": [json.loads(raw) for raw in result.fields["raw_bindings"]],
            "isHttp": infos[result.fields["name"]].is_http_func,
            "inputs": {name: t.binding_name for name, t in infos[result.fields["name"]].input_types.items()},
        }
        for result in results
    ]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
