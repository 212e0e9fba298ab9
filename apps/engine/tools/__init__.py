"""The tool system: protocol, registry, executor and the built-in tools (DESIGN 2.5)."""
