"""The WebSocket wire protocol (pydantic frames), group names, publish-after-commit."""
