"""azure-functions' private names the local host relies on; nothing else reads an underscore of the library.

Checked on azure-functions 1.22.0b4 (the oldest a Functions worker hands the app), 1.26.0 and 2.3.0. Each assumption
is pinned by a test of the same name in tests/deps/test_private_assumptions.py:

- `TraceContext`, `RetryContext`: `azure.functions._abc`'s abstract bases of a function's `context.trace_context`
  and `context.retry_context`, which the direct invoker's context implements, as the worker's does.
"""

from __future__ import annotations

from azure.functions._abc import RetryContext, TraceContext

__all__ = ["RetryContext", "TraceContext"]
