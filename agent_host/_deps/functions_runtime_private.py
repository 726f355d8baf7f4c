"""azure-functions-runtime's private names the local host's worker invoker relies on; nothing else reads them.

Checked on azure-functions-runtime 1.3.0 (requirements-dev.txt, Python 3.13 only: the library is imported inside each
function, so this module imports anywhere). Each assumption is pinned by a test of the same name in
tests/deps/test_private_assumptions.py:

- `worker_function_registry`: `handle_event._functions` is the registry the worker's indexing fills
  (`loader.process_indexed_function`) and its invocations read.
- `set_http_streams`: `http_v2.HttpV2Registry` decides once per process whether HTTP streams are on, and keeps the
  answer in `_http_v2_enabled` (checked once `_http_v2_enabled_checked`) with the extension module in `_ext_base`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["set_http_streams", "worker_function_registry"]


def worker_function_registry() -> Any:
    """The worker's function registry, which indexing fills and invocations read."""
    from azure_functions_runtime import handle_event

    return handle_event._functions


def set_http_streams(enabled: bool) -> None:
    """Settle the worker's once-per-process decision whether HTTP streams are on, as if it had made it."""
    from azure_functions_runtime.http_v2 import HttpV2Registry

    if enabled:
        import azurefunctions.extensions.base as ext_base

        HttpV2Registry._ext_base = ext_base
    HttpV2Registry._http_v2_enabled = enabled
    HttpV2Registry._http_v2_enabled_checked = True
