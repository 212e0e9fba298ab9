"""git settings given on git's command line through the environment (git-config(1),
"ENVIRONMENT": ``GIT_CONFIG_COUNT``, ``GIT_CONFIG_KEY_<n>``, ``GIT_CONFIG_VALUE_<n>``).

Configuration given this way outranks every file git reads, a repository's own ``config``
included, which is why the places that run git on text we do not trust use it.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["command_line_config"]


def command_line_config(settings: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that give git ``settings`` (``{"core.fsmonitor": "false"}``);
    they replace any ``GIT_CONFIG_COUNT`` list already in an environment they are merged into."""
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for index, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
