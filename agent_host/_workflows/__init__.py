"""Hosted workflows: Agent Framework workflows run as orchestrations, agent nodes as conversation turns."""
