"""The HTTP side: route handlers that parse, take a turn or signal through the conversation client, and render.

Routes are declared once (`route_table.HttpRoute`: path, methods, handlers; the table itself is `_app.py`'s).
Handlers read conversations as the read model (`_conversation/view.py`); they know no stored key, nor how the
entity runs a turn.
"""
