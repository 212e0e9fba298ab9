"""Channels routing for rooms: the conversation socket and the ``agent-runs`` worker."""

from __future__ import annotations

from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

RUN_CHANNEL = "agent-runs"


def _build():  # replaced by the real consumers below once they exist
    raise NotImplementedError
