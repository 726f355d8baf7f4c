"""Shifts the wall clock by CLOCK_SHIFT (e.g. `+3y` or `-40d`) to prove no test needs today's date.

CI runs the suite with this folder on PYTHONPATH, so the test process and every `python` it starts read a wall
clock years ahead or weeks behind. Only `time.time` and `time.time_ns` move; monotonic clocks are untouched.
"""

from __future__ import annotations

import os
import re
import time

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


def _shift_seconds(text: str) -> int:
    match = re.fullmatch(r"([+-]?\d+)([smhdy])", text.strip())
    if match is None:
        raise SystemExit(f"CLOCK_SHIFT={text!r} must look like +3y, -40d, 90m or 3600s.")
    return int(match.group(1)) * _UNITS[match.group(2)]


_shift = os.environ.get("CLOCK_SHIFT")
if _shift:
    _seconds = _shift_seconds(_shift)
    _real_time, _real_time_ns = time.time, time.time_ns
    time.time = lambda: _real_time() + _seconds
    time.time_ns = lambda: _real_time_ns() + _seconds * 1_000_000_000

    import importlib.abc
    import importlib.machinery
    import sys
    import types

    # gRPC's Python half turns a call's timeout into an absolute deadline with time.time() and hands it to its C core,
    # which reads the real wall clock: with a shifted clock every deadline would be weeks early (DEADLINE_EXCEEDED at
    # once) or years late. Its own modules keep the real clock; everything else, ours included, sees the shifted one.
    _GRPC_MODULES = {
        "grpc._channel",
        "grpc._common",
        "grpc._server",
        "grpc._utilities",
        "grpc.aio._utils",
        "grpc._cython.cygrpc",
    }
    _real_clock = types.SimpleNamespace(
        **{name: getattr(time, name) for name in dir(time) if not name.startswith("__")}
        | {"time": _real_time, "time_ns": _real_time_ns}
    )

    class _RealClockLoader(importlib.abc.Loader):
        def __init__(self, inner: importlib.abc.Loader) -> None:
            self._inner = inner

        def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
            return self._inner.create_module(spec)

        def exec_module(self, module: types.ModuleType) -> None:
            self._inner.exec_module(module)
            module.time = _real_clock  # type: ignore[attr-defined]

    class _RealClockForGrpc(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
            if name not in _GRPC_MODULES:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)  # type: ignore[arg-type]
            if spec is not None and spec.loader is not None:
                spec.loader = _RealClockLoader(spec.loader)
            return spec

    sys.meta_path.insert(0, _RealClockForGrpc())
