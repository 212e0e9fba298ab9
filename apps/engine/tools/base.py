"""The tool protocol (DESIGN 2.5): a spec, an optional argument preparation, and ``invoke``.

A tool never crashes a run: invalid arguments go back to the model as an input validation error
(the executor validates against ``spec.parameters`` first), and an exception inside ``invoke``
becomes an error result. ``ToolError`` is the way to say "this failed, tell the model why".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from apps.engine.messages import ImageBlock, TextBlock, ToolDefinition
from apps.engine.tools.mounts import ReadOnlyMounts

if TYPE_CHECKING:
    from apps.engine.events import RuntimeEvent
    from apps.engine.ports import InputPort

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "BaseTool",
    "Concurrency",
    "Tool",
    "ToolCategory",
    "ToolContext",
    "ToolEnvironment",
    "ToolOutput",
    "ToolSpec",
]


class Concurrency(StrEnum):
    """May a call run beside others? ``input_dependent``: the tool decides from the arguments
    (Bash through the read-only analyzer, MCP through readOnlyHint)."""

    ALWAYS = "always"
    NEVER = "never"
    INPUT_DEPENDENT = "input_dependent"


class ToolCategory(StrEnum):
    """Where a tool comes from, for grouping and for sub-agent tool subsets."""

    CORE = "core"
    AGENT = "agent"
    PLAN = "plan"
    TASK = "task"
    TEAM = "team"
    MCP = "mcp"
    EXPERIMENTAL = "experimental"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool and how the executor treats it.

    ``parameters``: a JSON Schema object (the OpenAI function-calling form, DESIGN 2.1);
    ``requires_approval``: the default of the team policy for this tool; ``timeout_s``: seconds
    one call may run before it is aborted (None: no limit, for tools that wait on people).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    category: ToolCategory = ToolCategory.CORE
    concurrency: Concurrency = Concurrency.NEVER
    requires_approval: bool = False
    timeout_s: float | None = 120.0

    def definition(self) -> ToolDefinition:
        """The provider-neutral definition sent with each request."""
        return ToolDefinition(name=self.name, description=self.description,
                              parameters=self.parameters)


DEFAULT_MAX_RESULT_CHARS = 30_000
"""Characters of a tool result the model gets as they are; a longer result is stored whole in
the workspace and the model gets a preview (:mod:`apps.engine.tools.results`)."""


@dataclass(frozen=True, slots=True)
class ToolEnvironment:
    """Host settings the tools obey: ``allow_private_network`` (WebFetch, MCP HTTP: loopback,
    private and link-local targets), ``max_result_chars`` (a longer result is stored in the
    workspace and the model gets a preview and the path), ``sandbox`` ("auto": bubblewrap when
    installed; "off"), ``ask_timeout_s`` (how long AskUser waits for an answer)."""

    allow_private_network: bool = False
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    sandbox: str = "auto"
    ask_timeout_s: float = 900.0


@dataclass(slots=True)
class ToolContext:
    """One call's world: its id and validated ``arguments``, the conversation's ``workspace``
    (every file and shell tool is confined to it), ``emit`` to report runtime events (todos,
    questions, nested sub-agent events), the room's ``inputs`` port for AskUser, ``env``, the
    run's read-only ``mounts`` (the wiki at ``wiki/``) and per-run ``services`` (``"wiki"``:
    the team wiki's port)."""

    call_id: str
    arguments: dict[str, Any]
    workspace: Path
    emit: Callable[[RuntimeEvent], Awaitable[None]]
    inputs: InputPort | None = None
    env: ToolEnvironment = field(default_factory=ToolEnvironment)
    services: dict[str, Any] = field(default_factory=dict)  # e.g. "subagent" for Task
    mounts: ReadOnlyMounts | None = None


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a call returns: text (or text and image blocks), ``is_error`` for a failure."""

    content: str | list[TextBlock | ImageBlock]
    is_error: bool = False


@runtime_checkable
class Tool(Protocol):
    """A tool: ``spec``, ``is_concurrency_safe(args)``, ``needs_approval(args)``,
    ``prepare_arguments(args)`` (normalize before validation), ``async invoke(ctx)``."""

    spec: ToolSpec

    def is_concurrency_safe(self, arguments: dict[str, Any]) -> bool: ...

    def needs_approval(self, arguments: dict[str, Any]) -> bool: ...

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def invoke(self, ctx: ToolContext) -> ToolOutput: ...


class BaseTool:
    """Defaults for the optional parts of :class:`Tool`; subclasses set ``spec`` and ``invoke``."""

    spec: ClassVar[ToolSpec]

    def is_concurrency_safe(self, arguments: dict[str, Any]) -> bool:
        """``always`` tools are safe; ``never`` ones are not; input-dependent tools override."""
        return self.spec.concurrency is Concurrency.ALWAYS

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        """The spec's default; input-dependent tools (Bash) override."""
        return self.spec.requires_approval

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments as the model sent them."""
        return arguments

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError
