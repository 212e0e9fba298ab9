"""fakellm: the offline scripted model behind real HTTP, in the three real wire formats.

Run it with ``python -m apps.engine.fakellm --host 127.0.0.1 --port 8765 [--rate 50]``. It serves

- Anthropic Messages: ``POST /v1/messages`` (base URL ``http://127.0.0.1:8765``),
- OpenAI Chat Completions: ``POST /v1/chat/completions`` (base URL ``http://127.0.0.1:8765/v1``),
- Gemini: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (base URL
  ``http://127.0.0.1:8765``),

plus the model lists (``GET /v1/models``, ``GET /v1beta/models``), so confab's real adapters run
end to end without an API key.

What it says follows a script (full rules in :mod:`apps.engine.providers.script`): the most
recent message written by a person whose text is ``{"script": [step, ...]}`` with steps
``{"thinking": "..."}``, ``{"text": "..."}``, ``{"tool_call": {"name": "...", "arguments":
{...}}}`` and ``{"error": {"status": 529, "in_stream": false, "message": "...", "retry_after":
0}}``, or a transport fault ``{"error": {"fault": "silent" | "reset" | "truncate"}}``
(:mod:`apps.engine.fakellm.faults`). The steps are cut into model turns after each run of
consecutive ``tool_call`` steps; the k-th request after the script message plays turn k (k = the
number of assistant messages since it). An error step fails that one request, with that HTTP
status or inside the 200 stream, and the retry plays the turn's remaining steps. Without a
script it answers with a short text saying it is the offline scripted model. ``--rate`` paces
the stream in tokens (word pieces) per second; 0 sends everything at once. ``--stamp`` (off by
default) starts each streamed text or thinking piece with the wall-clock time it was sent,
``⟦1732950000.123456⟧``, for latency benchmarks (:func:`apps.engine.fakellm.wire.stamps` reads
them).
"""

from apps.engine.fakellm.app import create_app

__all__ = ["create_app"]
