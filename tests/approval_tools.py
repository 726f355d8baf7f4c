"""A tool that needs the caller's approval, for the approval tests on either host: `refund`, which records each order
it refunded in `executed` (a test clears it first)."""

from __future__ import annotations

from agent_framework import tool

executed: list[str] = []


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    executed.append(order_id)
    return f"Refunded {order_id}."
