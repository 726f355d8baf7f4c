"""The private internals of dependencies this package relies on, in one place per dependency.

Nothing else in the package imports an underscore module or reads an underscore attribute of agent-framework-core
(agent_framework_private.py, and agent_framework_workflows_private.py for its workflow package, so the conversation
entity does not load it), azure-functions-durable (durable_private.py), or, for the local host, azure-functions
(functions_private.py) and azure-functions-runtime (functions_runtime_private.py). Each module lists its assumptions
and the versions they were checked on; tests/deps/test_private_assumptions.py pins each one by name, so an upgrade
that breaks one fails there first. Knows the dependencies, nothing of the package.
"""
