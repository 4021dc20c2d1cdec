"""Names that become parts of paths (experiments, learners, run ids) and labels that are
shown to people (legends, tables), checked the same way in configs and in run folders
read back from disk; and counts said to people (:func:`count`: ``1 update``, ``2 updates``)."""

from __future__ import annotations

import re

NAME_HELP = ("1 to 100 ASCII letters, digits, '.', '_' or '-', not starting with '.' or '-' "
             "(e.g. mslr_slam.v2)")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", re.ASCII)

LABEL_HELP = "one line of at most 100 printable characters"
_MAX_LABEL = 100


def is_name(value: object) -> bool:
    """``value`` is a name that is safe as one path component (and as a file-name stem)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: str) -> str:
    """Validator: ``value`` is a name, else ValueError stating the allowed characters."""
    if not is_name(value):
        raise ValueError(f"must be {NAME_HELP}")
    return value


def is_label(value: object) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= _MAX_LABEL
            and all(ch.isprintable() for ch in value))


def check_label(value: str | None) -> str | None:
    """Validator: a legend label is one short line without control characters."""
    if value is not None and not is_label(value):
        raise ValueError(f"a label must be {LABEL_HELP}")
    return value


_IRREGULAR = {"query": "queries", "copy": "copies"}


def plural(noun: str) -> str:
    """``update`` -> ``updates``, ``query`` -> ``queries``; a last word after a space is the
    one inflected (``data file`` -> ``data files``)."""
    head, _, last = noun.rpartition(" ")
    word = _IRREGULAR.get(last, last + ("es" if last.endswith(("s", "x", "ch", "sh")) else "s"))
    return f"{head} {word}" if head else word


def count(n: int, noun: str) -> str:
    """``n`` with ``noun`` in the number it needs: ``1 update``, ``2 updates``, ``0 folds``,
    ``1 query``, ``1,200 queries`` (thousands separated)."""
    return f"{n:,} {noun if n == 1 else plural(noun)}"


# --- settings as people read them: YAML's flow style, one form everywhere --------------------

_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_.@/+-]*\Z", re.ASCII)
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "~", ".nan", ".inf", "-.inf"}


def setting_value(value: object) -> str:
    """A config value as YAML writes it in flow style: ``true``, ``null``, ``1`` (a float
    with an integer value as the integer), ``0.001``, ``1e-05``, ``[a, b]``, ``{rule:
    inv-sqrt, eta: 1}``; a string that YAML would read as another type (``'true'``, ``'1'``)
    or that has spaces or punctuation is single-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(setting_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {setting_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS and not _is_number(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def setting_key(key: str, learner: str | None = None) -> str:
    """A dotted config key as settings are named: a learner's own keys relative to the
    learner (``learners.slam-ndcg.step.eta`` and ``learner.step.eta`` -> ``step.eta``),
    any other key in full (``protocol.passes``)."""
    for prefix in ("learner.",) + ((f"learners.{learner}.",) if learner else ()):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def setting(key: str, value: object, learner: str | None = None) -> str:
    """One setting: ``step.eta: 1``, ``protocol.shuffle: true``, ``grid.C: [0.1, 1]``."""
    return f"{setting_key(key, learner)}: {setting_value(value)}"


def settings_text(settings: dict[str, object], learner: str | None = None) -> str:
    """Settings in one line, comma-separated: ``step.eta: 1, protocol.shuffle: true``."""
    return ", ".join(setting(k, v, learner) for k, v in settings.items())
