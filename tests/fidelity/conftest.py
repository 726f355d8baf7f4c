"""Each difference between the local host and the real Python worker, in every invocation mode this Python has.

The direct invoker runs everywhere; the worker invoker (the worker's own code) where `azure-functions-runtime` does,
Python 3.13+. A test taking `mode` runs once per mode, so on 3.13 each behaviour is shown to be the worker's own.
"""

from __future__ import annotations

import pytest

from agent_host._local_host.invocation import worker_unavailable_reason

MODES = ["direct"] + (["worker"] if worker_unavailable_reason() is None else [])


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param
