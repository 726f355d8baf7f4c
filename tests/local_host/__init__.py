"""Tests of the local host as a Durable Functions host for orchestrations (a package, so its conftest and helpers
cannot clash with other test folders' modules)."""
