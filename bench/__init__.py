"""Benchmarks of agent-host's per-turn cost, stored bytes, HTTP latency and retention, beside the published host.

Run `python -m bench` (or `python -m bench --quick` for a smoke run); see docs/benchmarks.md.
"""
