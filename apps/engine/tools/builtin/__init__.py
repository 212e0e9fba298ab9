"""The built-in tools (DESIGN 2.5), one module per tool.

Each module defines one ``BaseTool`` subclass with a class-level ``spec``; the names and
parameters are the ones models are trained on (Claude Code's). The file tools (Read, Write, Edit,
Glob, Grep) are confined to the conversation's workspace through ``apps.engine.tools.workspace``.
"""
