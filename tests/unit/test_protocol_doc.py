"""docs/protocol.md's closed list of the socket's error codes is the server's list.

A code missing from it (``too_large`` was, found by a newcomer's check) is one a client written
from the document does not expect. ``unsupported_type`` is an image upload's (REST) alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from apps.common.errors import ErrorCode

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
REST_ONLY = {ErrorCode.UNSUPPORTED_TYPE}


def test_the_documented_closed_list_is_every_socket_error_code() -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    listed = re.search(r"Error codes \(a closed list\):(.*?)\n\n", text, re.S)
    assert listed is not None, "protocol.md lost its list of error codes"
    documented = set(re.findall(r"`([a-z_]+)`", listed.group(1)))
    assert documented == {str(code) for code in ErrorCode} - REST_ONLY
