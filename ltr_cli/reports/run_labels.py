"""Names for runs that share a learner label: the settings that tell them apart (e.g.
``ListNet (step.eta: 0.1)``), never a bare hash. Used by plot legends, report rows, the
selection table and ``ltr compare``. Settings are written as :func:`ltr_cli.names.setting`
writes them: YAML's flow style, a learner's keys relative to the learner."""

from __future__ import annotations

from typing import Any

from ltr_cli.names import settings_text

# config keys that never tell results apart (or are shown elsewhere)
_IGNORED = ("seed", "seeds", "description", "output", "cache", "plot", "sweep")


def flat_config(config: Any) -> dict[str, Any]:
    """A run's resolved config as ``{dotted.key: value}``; its one learner's settings under
    ``learner.`` whatever the learner's name."""
    out: dict[str, Any] = {}

    def walk(data: Any, prefix: str) -> None:
        if isinstance(data, dict) and data:
            for k, v in data.items():
                walk(v, f"{prefix}{k}.")
        else:
            out[prefix.rstrip(".")] = data

    if not isinstance(config, dict):
        return out
    for key, value in config.items():
        if key in _IGNORED:
            continue
        if key == "learners" and isinstance(value, dict) and len(value) == 1:
            walk(next(iter(value.values())), "learner.")
        else:
            walk(value, f"{key}.")
    return out


def differing_settings(configs: list[Any]) -> list[dict[str, Any]]:
    """For each config, the keys (shortened: no ``learner.`` prefix) whose values differ
    among ``configs``, with its own values."""
    flats = [flat_config(c) for c in configs]
    keys = sorted(set().union(*flats)) if flats else []
    differing = [k for k in keys if len({repr(f.get(k)) for f in flats}) > 1]
    return [{k.removeprefix("learner."): f.get(k) for k in differing} for f in flats]


def describe_settings(settings: dict[str, Any]) -> str:
    """``step.eta: 0.1, protocol.shuffle: true`` (:func:`ltr_cli.names.settings_text`)."""
    return settings_text(settings)


def with_settings(label: str, settings: dict[str, Any]) -> str:
    """``label (key: value, ...)``, or the label alone when nothing differs."""
    return f"{label} ({describe_settings(settings)})" if settings else label
