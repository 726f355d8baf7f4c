"""The inspector: a page the app serves that shows what the host holds for a conversation or a workflow run."""
