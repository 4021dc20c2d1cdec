"""A click model from what a user names: a named model, or a custom table.

Named models are the registry's (:data:`ltr_cli.clicks.base.CLICK_MODELS`, the entry points
of ``ltr_cli.click_models``): the cascade tables under a stop rule, the models that examine
by rank (``pbm``, ``examine-stop``, ``ultra-pbm``, ``trust-bias``) and any plugin's. A
custom model is a mapping ``{click: [...], stop: [...]}`` (a cascade; one probability per
grade) or ``{type: <a named model without stop rules>, click: [...]}``; ``click`` and
``stop`` may also name a table (``click: navigational``). Every refusal is one line naming
the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ltr_cli.clicks.base import CLICK_MODELS, ClickModel, ClickModelKind, ClickSettings
from ltr_cli.clicks.cascade import CASCADE
from ltr_cli.clicks.tables import GRADES, TABLE_NAMES, table
from ltr_cli.errors import LtrError

#: the defaults: 5 grades, eta 1 (the reference code's ``ex_per_1``); a cascade's default
#: stop rule is the first of its ``stop_rules`` (``after-click``, the textbook one)
DEFAULT_GRADES, DEFAULT_ETA = 5, 1.0
#: the largest custom table
MAX_GRADES = 32
_KEYS = ("type", "click", "stop")


def _kind_of(model: Any) -> ClickModelKind | None:
    """The kind ``model`` (a name, or a custom mapping) names; None for an unknown name."""
    kind = model.get("type", "cascade") if isinstance(model, Mapping) else model
    if kind == "cascade" and isinstance(model, Mapping):
        return CASCADE
    return CLICK_MODELS[kind] if isinstance(kind, str) and kind in CLICK_MODELS.names() and kind in CLICK_MODELS \
        else None


def takes_eta(model: Any) -> bool:
    """Whether ``model`` (a name, or a custom mapping) takes an examination exponent."""
    kind = _kind_of(model)
    return kind is not None and kind.eta


def takes_stop(model: Any) -> bool:
    """Whether ``model`` (a name, or a custom mapping) takes a stop rule."""
    kind = _kind_of(model)
    return kind is not None and bool(kind.stop_rules)


def named_with(flag: str) -> str:
    """The named models whose kind has ``flag`` set (``eta``, ``stop_rules``), for messages."""
    return ", ".join(n for n, k in CLICK_MODELS.items() if getattr(k, flag))


def parse_labels(text: str, where: str = "--labels") -> list[int]:
    """``"4,0,2,1"`` -> ``[4, 0, 2, 1]``; a one-line error naming ``where`` otherwise."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise LtrError(f"{where} {text!r}: give the shown labels as whole numbers separated by commas, e.g. 4,0,2,1")
    for t in items:
        if not (t.isascii() and t.isdigit()) or len(t) > 6:
            raise LtrError(f"{where}: {t!r} is not a relevance grade (a whole number 0, 1, 2, ...)")
    return [int(t) for t in items]


def _probabilities(value: Any, key: str, grades: int | None) -> tuple[float, ...]:
    """A custom column: a named table's column, or a list of probabilities in [0, 1]."""
    if isinstance(value, str):
        if value not in TABLE_NAMES:
            raise LtrError(f"{key}: {value!r} is not a named table ({', '.join(TABLE_NAMES)}); "
                           "or give one probability per grade")
        t = table(value, grades if grades is not None else DEFAULT_GRADES)
        return t.click if key.endswith("click") else t.stop
    if isinstance(value, list) and grades is not None and len(value) != grades:
        raise LtrError(f"{key}: {len(value)} probabilities for {grades} grades; give one per grade "
                       "(or a --grades that matches the table)")
    if not isinstance(value, list) or not 2 <= len(value) <= MAX_GRADES:
        raise LtrError(f"{key}: give a list of one probability per grade (2 to {MAX_GRADES} grades), "
                       "or a named table")
    out = []
    for r, p in enumerate(value):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise LtrError(f"{key}: the value at grade {r} ({p!r}) is not a probability in [0, 1]")
        out.append(float(p))
    return tuple(out)


def _custom_kind(raw: Mapping[str, Any], where: str) -> tuple[str, ClickModelKind]:
    """A custom mapping's type and kind: ``cascade`` (the default), or a named model that is
    not one of the named tables' cascades (its stops, if any, are its own)."""
    kind = raw.get("type", "cascade")
    if kind == "cascade":
        return kind, CASCADE
    others = [n for n, k in CLICK_MODELS.items() if k.build is not CASCADE.build]
    if not isinstance(kind, str) or kind not in others:
        raise LtrError(f"{where}.type: {kind!r} is not cascade, {', '.join(others)}")
    return kind, CLICK_MODELS[kind]


def _custom(raw: Any, where: str, grades: int | None) -> tuple[str, ClickModelKind, tuple[float, ...],
                                                                tuple[float, ...]]:
    """(type, kind, click, stop) of a custom mapping (stop empty for a kind without stop rules)."""
    if not isinstance(raw, Mapping):
        raise LtrError(f"{where}: give a model name ({', '.join(CLICK_MODELS.names())}) or a table "
                       "{click: [...], stop: [...]}")
    kind, built = _custom_kind(raw, where)
    keys = _KEYS + tuple(k for _, other in CLICK_MODELS.items() for k in other.keys if k not in _KEYS)
    for key in raw:
        if key not in keys:
            raise LtrError(f"{where}.{key}: unknown key; a custom click model has {', '.join(dict.fromkeys(keys))}")
    if "click" not in raw:
        raise LtrError(f"{where}.click: missing; give one click probability per grade")
    if built.stop_rules and "stop" not in raw:
        raise LtrError(f"{where}.stop: missing; a cascade needs one stop probability per grade")
    for key in raw:
        if key not in _KEYS and key not in built.keys:
            owners = ", ".join(n for n, k in CLICK_MODELS.items() if key in k.keys)
            raise LtrError(f"{where}.{key}: only a {owners} model has it")
    if not built.stop_rules and "stop" in raw:
        raise LtrError(f"{where}.stop: a {kind} model takes no stop table (its stops come from eta)")
    lists = [len(v) for v in (raw.get("click"), raw.get("stop")) if isinstance(v, list)]
    size = grades if grades is not None else (lists[0] if lists else None)
    click = _probabilities(raw["click"], f"{where}.click", size)
    stop = _probabilities(raw["stop"], f"{where}.stop", len(click)) if built.stop_rules else ()
    return kind, built, click, stop


def build_model(model: Any, grades: int | None = None, stop: str | None = None, eta: float | None = None,
                where: str = "--model", hint: str = "--grades", keys: tuple[str, str] = ("--stop", "--eta")
                ) -> ClickModel:
    """The click model ``model`` names: a name of the registry, a mapping, or (as a command
    line gives it) a mapping written in YAML flow style. ``grades`` picks the named table
    (default 5) and must match a custom table's length; ``stop`` is a stop rule of a model
    that takes one (default: its first); ``eta`` the exponent of a model that takes one
    (default 1). ``where``, ``hint`` and ``keys`` (of ``stop`` and ``eta``) are how the
    errors name the model, the grades and those settings."""
    if grades is not None and grades not in GRADES and not isinstance(model, Mapping) \
            and not (isinstance(model, str) and model.lstrip().startswith("{")):
        raise LtrError(f"{hint} {grades}: the named click tables exist for 2, 3 and 5 grades")
    if isinstance(model, str) and model.lstrip().startswith("{"):
        from ltr_cli.core.yamlio import YamlProblem, parse_yaml

        try:
            model = parse_yaml(model)
        except YamlProblem as exc:
            raise LtrError(f"{where}: {exc.problem}") from None
    if isinstance(model, str):
        if model not in CLICK_MODELS.names() or model not in CLICK_MODELS:
            raise LtrError(f"{where} {model!r}: unknown click model; the models are {', '.join(CLICK_MODELS)}, "
                           "or a table {click: [...], stop: [...]}")
        return build_named(model, CLICK_MODELS[model], grades, stop, eta, where, hint, keys)
    kind, built, click, stops = _custom(model, where, grades)
    options = {k: v for k, v in model.items() if k in built.keys}
    return _build(kind, built, ClickSettings("custom", click, stops, "custom", None, None, hint, where, options),
                  stop, eta, keys)


def build_named(name: str, built: ClickModelKind, grades: int | None = None, stop: str | None = None,
                eta: float | None = None, where: str = "--model", hint: str = "--grades",
                keys: tuple[str, str] = ("--stop", "--eta")) -> ClickModel:
    """The named model ``name`` of kind ``built`` on its table at ``grades`` (default 5),
    under ``stop`` and ``eta`` (as :func:`build_model`)."""
    t = table(built.table, grades if grades is not None else DEFAULT_GRADES)
    return _build(name, built, ClickSettings(name, t.click, t.stop, t.name, None, None, hint, where), stop, eta, keys)


def _build(kind: str, built: ClickModelKind, settings: ClickSettings, stop: str | None, eta: float | None,
           keys: tuple[str, str]) -> ClickModel:
    """The model of ``settings`` under the stop rule and eta given, both checked against the kind."""
    stop_key, eta_key = keys
    name = settings.name
    if not built.eta and eta is not None:
        raise LtrError(f"{eta_key} applies to {named_with('eta')} only; {name} "
                       + (f"is a cascade (use {stop_key})" if built.stop_rules else "takes no exponent"))
    if not built.stop_rules and stop is not None:
        raise LtrError(f"{stop_key} applies to the models with a stop rule only; {kind} takes none "
                       f"({named_with('stop_rules')} do)")
    rule = None
    if built.stop_rules:
        rule = stop if stop is not None else built.stop_rules[0]
        if rule not in built.stop_rules:
            raise LtrError(f"{stop_key} {rule!r}: the stop rules are {', '.join(built.stop_rules)}")
    power = None
    if built.eta:
        power = DEFAULT_ETA if eta is None else eta
        if not (math.isfinite(power) and power >= 0):
            raise LtrError(f"{eta_key} {power}: give a finite exponent >= 0 (examination (1/rank)^eta, "
                           "or ULTRA's table^eta)")
    return built.build(replace(settings, stop_rule=rule, eta=power))
