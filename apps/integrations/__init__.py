"""Integrations: providers, models and (later) MCP servers; builders of engine objects."""
