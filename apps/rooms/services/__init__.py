"""Writes about rooms, conversations, messages and runs: one module per subject (DESIGN 3.2).

Services are keyword-only, typed functions named ``<entity>_<action>``; they authorize the
caller themselves, so every interface (REST, WebSocket, admin, the web pages) gets the same rules.
"""
