"""Config validation errors as one line: the key path a user wrote (without the tags of
discriminated unions), the problem, the value and how to write it, an unknown key first
and with a did-you-mean from the schema's own key names."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ltr_cli.errors import ConfigError
from ltr_cli.learners.registry import LEARNER_TYPES

_DATASET_KINDS = ("separable", "shaped", "registry", "files")

_NUMBER_ERRORS = ("int_type", "int_parsing", "int_from_float", "float_type", "float_parsing")


def _type_hint(kind: str, value: Any) -> str:
    """How to write the value the key expects, for the usual type slips."""
    if kind in _NUMBER_ERRORS:
        if isinstance(value, bool):
            return "true/false is a boolean, not a number"
        if isinstance(value, str):
            return ("numbers are written unquoted as YAML 1.2 numbers, e.g. 1000, 0.5, 1e-3 "
                    "(no '_' separators, no ':')")
        if kind.startswith("int") and isinstance(value, float):
            if value == value and abs(value) < 1e18 and value.is_integer():
                return f"an integer is written with digits only, e.g. {int(value)}"
            return "expected a whole number written with digits"
    if kind == "bool_type":
        return "write true or false (yes/no/on/off are strings in YAML 1.2)"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        return "quote it to make it a string"
    return ""


def _known_keys(root: type[BaseModel]) -> list[str]:
    """Every key name any config model knows (for did-you-mean suggestions)."""
    names: set[str] = set()
    seen: set[type[BaseModel]] = set()

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(name)
            for arg in _annotation_models(info.annotation):
                visit(arg)

    visit(root)
    return sorted(names)


def _annotation_models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's annotation (unions, lists, dicts)."""
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in typing.get_args(annotation):
        found.extend(_annotation_models(arg))
    return found


def _tagged(models: list[type[BaseModel]], tag: Any) -> type[BaseModel] | None:
    """The member of a discriminated union whose tag (a ``Literal`` field) is ``tag``."""
    import typing

    for model in models:
        for info in model.model_fields.values():
            if typing.get_origin(info.annotation) is typing.Literal and tag in typing.get_args(info.annotation):
                return model
    return None


def _model_at(loc: list[Any], root: type[BaseModel]) -> type[BaseModel] | None:
    """The config model that holds the last key of ``loc`` (pydantic's location, union
    tags included): the root's fields, a nested block's, or a learner type's; None when
    the path cannot be followed."""
    from ltr_cli.learners.registry import REGISTRY

    model: type[BaseModel] | None = root
    pending: list[type[BaseModel]] = []  # the models a union or mapping field may hold
    for i, part in enumerate(loc[:-1]):
        if pending:
            chosen = _tagged(pending, part)
            if chosen is not None:
                model, pending = chosen, []
                continue
            if isinstance(part, int) or (model is not None and part not in model.model_fields):
                if len(pending) == 1:
                    model, pending = pending[0], []
                continue  # a mapping's key or a list's index: the same models below it
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        if model is root and part == "learners":
            tag = loc[i + 2] if len(loc) > i + 3 else None
            return REGISTRY[tag] if isinstance(tag, str) and tag in LEARNER_TYPES and len(loc) == i + 4 \
                else _learner_model(loc[i + 1:], tag)
        pending = _annotation_models(model.model_fields[part].annotation)
        if len(pending) == 1 and i + 1 == len(loc) - 1:
            return pending[0]
    if pending:
        return pending[0] if len(pending) == 1 else None
    return model


def _learner_model(rest: list[Any], tag: Any) -> type[BaseModel] | None:
    """The model under a learner (``rest``: its name, its type tag, then keys)."""
    from ltr_cli.learners.registry import REGISTRY

    if not isinstance(tag, str) or tag not in LEARNER_TYPES:
        return None
    return _model_at(list(rest[2:]), REGISTRY[tag]) if len(rest) > 3 else REGISTRY[tag]


def _edits(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: insertions, deletions, substitutions and swaps of two
    neighbours (``stpe`` is one edit from ``step``, two from ``type``)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _did_you_mean(key: str, top_level: bool, root: type[BaseModel], loc: list[Any] | None = None) -> str:
    import difflib

    if top_level:
        pool = list(root.model_fields)
    else:
        model = _model_at(loc, root) if loc else None
        pool = list(model.model_fields) if model is not None else _known_keys(root)
    close = sorted(difflib.get_close_matches(key, pool, n=3, cutoff=0.6), key=lambda k: _edits(key, k))
    return f"; did you mean {close[0]!r}?" if close else " (check the spelling; docs/config-reference.md lists every key)"


def _merge_union_branches(errors: list[Any]) -> list[Any]:
    """pydantic reports a value that fits no member of a union (``int | float``) once per
    member, each with the member's tag appended to the key (``grid.C.0.int``,
    ``grid.C.0.float``): one error at the key the user wrote instead."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for e in errors:
        loc = tuple(e["loc"])
        if loc and isinstance(loc[-1], str) and e["type"] not in ("extra_forbidden", "missing"):
            groups.setdefault((loc[:-1], repr(e.get("input"))), []).append(e)
    merged, done = [], set()
    for e in errors:
        loc = tuple(e["loc"])
        key = (loc[:-1], repr(e.get("input")))
        branches = groups.get(key, [])
        if len(branches) < 2:
            merged.append(e)
        elif key not in done:
            done.add(key)
            tags = {b["loc"][-1] for b in branches}
            msg = ("Input should be a number" if tags <= {"int", "float"}
                   else " or ".join(dict.fromkeys(b["msg"] for b in branches)))
            merged.append({**e, "loc": loc[:-1], "msg": msg, "type": "float_parsing" if tags <= {"int", "float"}
                           else e["type"]})
    return merged


def format_validation(source: str, exc: ValidationError, root: type[BaseModel]) -> ConfigError:
    """The first problem of a failed validation of ``root`` as one :class:`ConfigError`
    naming the key (an unknown key first, with a did-you-mean), the value and a hint."""
    errors = _merge_union_branches(exc.errors(include_url=False))
    # an unknown key is usually the cause of the rest (a misspelt required key is also
    # "missing"): report it first
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    parts = list(first["loc"])
    if len(parts) > 1 and parts[0] == "dataset" and parts[1] in _DATASET_KINDS:
        del parts[1]  # the discriminated union's tag is not a key the user wrote
    if len(parts) > 2 and parts[0] == "learners" and parts[2] in LEARNER_TYPES:
        del parts[2]
    loc = ".".join(str(p) for p in parts) or None
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        ctx = first.get("ctx", {})
        field = str(ctx.get("discriminator", "")).strip("'")
        loc = f"{loc}.{field}" if loc and field else loc
        if first["type"] == "union_tag_invalid":
            msg = f"unknown value {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
            if parts and parts[0] == "learners" and field == "type":
                from ltr_cli.learners.presets import PRESETS

                msg += f", or a preset of the literature: {', '.join(PRESETS)}"
        else:
            msg = f"missing; expected one of the {field} values listed in docs/config-reference.md"
        return ConfigError(source, loc, msg)
    if first["type"] == "extra_forbidden":
        msg = "unknown key" + _did_you_mean(str(parts[-1]), len(parts) == 1, root, list(first["loc"]))
    elif "input" in first and first["type"] not in ("missing",) and not isinstance(first["input"], (dict, list)):
        shown = repr(first["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        hint = _type_hint(first["type"], first["input"])
        msg = f"{msg} (got {shown}{'; ' + hint if hint else ''})"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return ConfigError(source, loc, msg + more)
