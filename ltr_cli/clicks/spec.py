"""A click model from what a user names: a named model, or a custom table.

Named models: the cascade tables (:data:`ltr_cli.clicks.tables.TABLE_NAMES`) under a stop
rule, ``pbm`` and ``examine-stop`` (the ``perfect`` table under an examination curve with
exponent eta), ``ultra-pbm`` and ``trust-bias`` (the ``perfect`` table under ULTRA's
examination table to the power eta). A custom model is a mapping ``{click: [...], stop:
[...]}`` (a cascade; one probability per grade) or ``{type: <an examining model>, click:
[...]}``; ``click`` and
``stop`` may also name a table (``click: navigational``). Every refusal is one line naming
the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ltr_cli.clicks.base import ClickModel
from ltr_cli.clicks.cascade import STOP_RULES, CascadeModel
from ltr_cli.clicks.examine import ExamineStopModel
from ltr_cli.clicks.pbm import PositionBasedModel
from ltr_cli.clicks.tables import GRADES, TABLE_NAMES, table
from ltr_cli.clicks.trust import DEFAULT_NEGATIVE, TablePositionModel, TrustBiasModel
from ltr_cli.errors import LtrError

#: the models that examine by rank: they take eta and no stop rule
EXAMINING: tuple[str, ...] = ("pbm", "examine-stop", "ultra-pbm", "trust-bias")
#: every named model, cascades first
MODEL_NAMES: tuple[str, ...] = TABLE_NAMES + EXAMINING
#: the defaults: 5 grades, the textbook stop rule, eta 1 (the reference code's ``ex_per_1``)
DEFAULT_GRADES, DEFAULT_STOP, DEFAULT_ETA = 5, "after-click", 1.0
#: the largest custom table
MAX_GRADES = 32
_KEYS = ("type", "click", "stop", "negative")


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


def _negative(model: Any, where: str) -> float:
    """A trust-bias model's rank-1 false-click rate: ``negative`` of a custom mapping, or the default."""
    value = model.get("negative", DEFAULT_NEGATIVE) if isinstance(model, Mapping) else DEFAULT_NEGATIVE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= 1):
        raise LtrError(f"{where}.negative: {value!r} is not a probability in [0, 1] (the false-click rate at rank 1)")
    return float(value)


def _custom(raw: Any, where: str, grades: int | None) -> tuple[str, tuple[float, ...], tuple[float, ...] | None]:
    """(type, click, stop or None) of a custom mapping."""
    if not isinstance(raw, Mapping):
        raise LtrError(f"{where}: give a model name ({', '.join(MODEL_NAMES)}) or a table "
                       "{click: [...], stop: [...]}")
    for key in raw:
        if key not in _KEYS:
            raise LtrError(f"{where}.{key}: unknown key; a custom click model has {', '.join(_KEYS)}")
    kind = raw.get("type", "cascade")
    if kind not in ("cascade",) + EXAMINING:
        raise LtrError(f"{where}.type: {kind!r} is not cascade, {', '.join(EXAMINING)}")
    if "click" not in raw:
        raise LtrError(f"{where}.click: missing; give one click probability per grade")
    if kind == "cascade" and "stop" not in raw:
        raise LtrError(f"{where}.stop: missing; a cascade needs one stop probability per grade")
    if "negative" in raw and kind != "trust-bias":
        raise LtrError(f"{where}.negative: only a trust-bias model has a false-click rate")
    if kind != "cascade" and "stop" in raw:
        raise LtrError(f"{where}.stop: a {kind} model takes no stop table (its stops come from eta)")
    lists = [len(v) for v in (raw.get("click"), raw.get("stop")) if isinstance(v, list)]
    size = grades if grades is not None else (lists[0] if lists else None)
    click = _probabilities(raw["click"], f"{where}.click", size)
    stop = _probabilities(raw["stop"], f"{where}.stop", len(click)) if kind == "cascade" else None
    return kind, click, stop


def build_model(model: Any, grades: int | None = None, stop: str | None = None, eta: float | None = None,
                where: str = "--model", hint: str = "--grades") -> ClickModel:
    """The click model ``model`` names: a name of :data:`MODEL_NAMES`, a mapping, or (as a
    command line gives it) a mapping written in YAML flow style. ``grades`` picks the named
    table (default 5) and must match a custom table's length; ``stop`` is a cascade's stop
    rule (default ``after-click``); ``eta`` the examining models' exponent (default 1)."""
    if grades is not None and grades not in GRADES and not isinstance(model, Mapping) \
            and not (isinstance(model, str) and model.lstrip().startswith("{")):
        raise LtrError(f"{hint} {grades}: the named click tables exist for 2, 3 and 5 grades")
    if isinstance(model, str) and model.lstrip().startswith("{"):
        from ltr_cli.core.yamlio import YamlProblem, parse_yaml

        try:
            model = parse_yaml(model)
        except YamlProblem as exc:
            raise LtrError(f"{where}: {exc.problem}") from None
    if isinstance(model, str) and model not in MODEL_NAMES:
        raise LtrError(f"{where} {model!r}: unknown click model; the models are {', '.join(MODEL_NAMES)}, "
                       "or a table {click: [...], stop: [...]}")
    stops: tuple[float, ...] | None
    if isinstance(model, str):
        t = table("perfect" if model in EXAMINING else model, grades if grades is not None else DEFAULT_GRADES)
        name, kind, click, stops, source = model, (model if model in EXAMINING else "cascade"), t.click, t.stop, t.name
    else:
        kind, click, stops = _custom(model, where, grades)
        name, source = "custom", "custom"
    if kind == "cascade":
        if eta is not None:
            raise LtrError(f"--eta applies to {', '.join(EXAMINING)} only; {name} is a cascade (use --stop)")
        rule = stop if stop is not None else DEFAULT_STOP
        if rule not in STOP_RULES:
            raise LtrError(f"--stop {rule!r}: the stop rules are {', '.join(STOP_RULES)}")
        assert stops is not None
        return CascadeModel(name, click, stops, rule, hint)
    if stop is not None:
        raise LtrError(f"--stop applies to the cascade models only; {kind} "
                       + ("stops only after a click, by position" if kind == "examine-stop" else "never stops"))
    power = DEFAULT_ETA if eta is None else eta
    if not (math.isfinite(power) and power >= 0):
        raise LtrError(f"--eta {power}: give a finite exponent >= 0 (examination (1/rank)^eta, "
                       "or ULTRA's table^eta)")
    cls = {"pbm": PositionBasedModel, "examine-stop": ExamineStopModel, "ultra-pbm": TablePositionModel,
           "trust-bias": TrustBiasModel}[kind]
    if kind == "trust-bias":
        return TrustBiasModel(name, click, power, source, hint, _negative(model, where))
    return cls(name, click, power, source, hint)
