"""Forms of the team settings page: the default model and the tool policy."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from django import forms

from apps.engine.tools.base import BaseTool
from apps.engine.tools.defaults import default_tools
from apps.integrations.models import ModelConfig
from apps.integrations.policy import needs_approval

__all__ = ["BuiltinTool", "DefaultModelForm", "ToolPolicyForm", "builtin_tools"]

DEFAULT, REQUIRE, EXEMPT = "default", "require", "exempt"


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A built-in tool as the policy form shows it: ``default`` says whether it asks for
    approval by itself ("asks", "runs unasked" or "asks for some calls"); ``rule`` says for
    which calls, when it depends on the call."""

    name: str
    default: str
    rule: str = ""


@cache
def builtin_tools() -> tuple[BuiltinTool, ...]:
    """The built-in tools of every run, in the order the model sees them."""
    return tuple(_describe(tool) for tool in default_tools())


def _describe(tool: Any) -> BuiltinTool:
    method = type(tool).needs_approval
    if method is not BaseTool.needs_approval:  # decided per call (Bash: unless read-only)
        return BuiltinTool(tool.spec.name, "asks for some calls", inspect.getdoc(method) or "")
    return BuiltinTool(tool.spec.name, "asks" if tool.spec.requires_approval else "runs unasked")


class DefaultModelForm(forms.Form):
    """The team's default model: one of the enabled models, or the site's default."""

    model = forms.ModelChoiceField(
        queryset=ModelConfig.objects.filter(enabled=True, provider__enabled=True)
        .select_related("provider").order_by("provider__name", "display_name", "model_id"),
        required=False, empty_label="Site default (the first enabled model)",
        label="Default model",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].label_from_instance = _model_label


def _model_label(model: ModelConfig) -> str:
    return f"{model} ({model.provider.name}, {model.context_window:,} tokens)"


class ToolPolicyForm(forms.Form):
    """One choice per built-in tool: follow its default, always ask, or never ask. Policy
    entries for other tools (MCP tools) are kept as they are."""

    def __init__(self, *args: Any, policy: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy if isinstance(policy, Mapping) else {}
        for tool in builtin_tools():
            self.fields[tool.name] = forms.ChoiceField(
                label=tool.name, initial=_choice(policy, tool.name),
                help_text=tool.rule, widget=forms.RadioSelect,
                choices=[(DEFAULT, f"Default: {tool.default}"), (REQUIRE, "Always ask"),
                         (EXEMPT, "Never ask")],
            )

    def lists(self) -> tuple[list[str], list[str]]:
        """``(require, exempt)`` to store: the choices made here plus the other tools'."""
        ours = {tool.name for tool in builtin_tools()}
        lists: dict[str, list[str]] = {REQUIRE: [], EXEMPT: []}
        for key, names in lists.items():
            stored = self.policy.get(key)
            if isinstance(stored, list):
                names.extend(name for name in stored if name not in ours)
        for tool in builtin_tools():
            choice = self.cleaned_data[tool.name]
            if choice != DEFAULT:
                lists[choice].append(tool.name)
        return lists[REQUIRE], lists[EXEMPT]


def _choice(policy: Mapping[str, Any], name: str) -> str:
    """The stored choice for ``name`` (``require`` wins over ``exempt``, as for runs)."""
    if needs_approval(policy, name, default=False):
        return REQUIRE
    return EXEMPT if not needs_approval(policy, name, default=True) else DEFAULT
