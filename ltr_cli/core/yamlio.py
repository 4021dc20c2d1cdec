"""Every YAML this tool reads or writes: configs, ``--set`` values, a run's ``config.yaml``.

Reading follows the YAML 1.2 core schema, not PyYAML's YAML 1.1 defaults:

* integers: ``[-+]?[0-9]+``, ``0o[0-7]+``, ``0x[0-9a-fA-F]+`` (no ``_`` separators, no
  ``0b``, no sexagesimal ``1:30``, and ``010`` is ten, not octal eight);
* floats: ``[-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)?``, ``.inf``, ``-.inf``,
  ``.nan`` (so ``1e3`` is a float, as in JSON);
* booleans: ``true`` / ``false`` (also ``True``, ``TRUE``...); ``yes``, ``no``, ``on``,
  ``off``, ``y``, ``n`` are strings;
* null: ``null``, ``~`` or nothing;
* every other plain scalar is a string (dates too). Only the core tags (``!!str``,
  ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!seq``, ``!!map``) are known;
  ``!!python/...``, ``!!binary``, ``!!timestamp``, ``!!set``, merge keys (``<<``) are not.

A mapping may not repeat a key; aliases (``*name``) are refused (no alias bombs, no shared
nodes), and so is nesting deeper than 64 levels (which would exhaust Python's recursion
limit). Problems are raised as :class:`YamlProblem` (a 1-based line and a one-line
problem); callers turn them into their own one-line errors.

Writing (:func:`dump_yaml`) quotes every string that a YAML 1.1 *or* 1.2 reader would take
for something else (``"1e3"``, ``"yes"``, ``"1_000"``), so files written here read back
identically with this loader and with PyYAML's ``safe_load``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

MAX_DEPTH = 64

_INT10 = re.compile(r"[-+]?[0-9]+\Z")
_INT8 = re.compile(r"0o[0-7]+\Z")
_INT16 = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)\Z")
_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")

_TAG = "tag:yaml.org,2002:"


class YamlProblem(Exception):
    """A YAML text that this tool does not accept. ``line`` is 1-based (or None)."""

    def __init__(self, line: int | None, problem: str):
        self.line = line
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"line {line}: {self.problem}" if line else self.problem)


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that this tool refuses (an alias, a repeated key, deep nesting)."""


class _Core12Resolver(yaml.resolver.BaseResolver):
    """Implicit tags of the YAML 1.2 core schema."""

    yaml_implicit_resolvers: dict[Any, Any] = {}


def _add_core12(cls: type[yaml.resolver.BaseResolver]) -> None:
    cls.add_implicit_resolver(_TAG + "bool", _BOOL, list("tTfF"))
    cls.add_implicit_resolver(_TAG + "int", re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z"),
                              list("-+0123456789"))
    cls.add_implicit_resolver(
        _TAG + "float",
        re.compile(r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                   r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"),
        list("-+.0123456789"))
    cls.add_implicit_resolver(_TAG + "null", _NULL, ["~", "n", "N", ""])


_add_core12(_Core12Resolver)


class StrictLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser,
                   yaml.composer.Composer, yaml.constructor.SafeConstructor, _Core12Resolver):
    """YAML 1.2 core schema, safe constructors only, no aliases, no duplicate keys, at
    most 64 levels deep."""

    yaml_constructors: ClassVar[dict[Any, Any]] = {}
    _depth = 0

    def __init__(self, stream: str):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _Core12Resolver.__init__(self)

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                problem=f"YAML aliases (*{event.anchor}) are not allowed; write the value out",
                problem_mark=event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(problem=f"nested more than {MAX_DEPTH} levels deep",
                                           problem_mark=self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping node, but found {node.id}",
                                   node.start_mark)
        mapping: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise ConstructorError(None, None, "a mapping key must be a plain value, not a list "
                                       "or mapping", key_node.start_mark) from None
            line = key_node.start_mark.line + 1
            if key in first_line:
                shown = repr(key) if len(repr(key)) <= 60 else repr(key)[:57] + "..."
                raise _Refused(problem=f"duplicate key {shown} (first at line {first_line[key]})",
                               problem_mark=key_node.start_mark)
            first_line[key] = line
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node):
        value = str(self.construct_scalar(node))
        if len(value) > MAX_INT_DIGITS:
            raise ConstructorError(None, None, f"an integer of {len(value)} characters is longer than "
                                   f"the {MAX_INT_DIGITS} this tool reads", node.start_mark)
        if _INT10.match(value):
            return int(value, 10)
        if _INT8.match(value):
            return int(value[2:], 8)
        if _INT16.match(value):
            return int(value[2:], 16)
        raise ConstructorError(None, None, f"{value!r} is not a YAML 1.2 integer", node.start_mark)

    def construct_yaml_float(self, node):
        value = str(self.construct_scalar(node))
        if _INF.match(value):
            return float("-inf") if value.startswith("-") else float("inf")
        if _NAN.match(value):
            return float("nan")
        if _FLOAT.match(value):
            return float(value)
        raise ConstructorError(None, None, f"{value!r} is not a YAML 1.2 number", node.start_mark)

    def construct_yaml_bool(self, node):
        value = str(self.construct_scalar(node))
        if _BOOL.match(value):
            return value.lower() == "true"
        raise ConstructorError(None, None, f"{value!r} is not a boolean (true or false)",
                               node.start_mark)


# the loader's own constructor table (what add_constructor fills): the core tags, and an
# error for every other tag
for _name in ("null", "bool", "int", "float", "str", "seq", "map"):
    StrictLoader.yaml_constructors[_TAG + _name] = getattr(StrictLoader, f"construct_yaml_{_name}")
StrictLoader.yaml_constructors[None] = StrictLoader.construct_undefined


def parse_yaml(text: str) -> Any:
    """The value of a YAML document under the rules above; :class:`YamlProblem` if refused."""
    loader = None
    try:
        loader = StrictLoader(text)  # what yaml.load does, with this loader
        return loader.get_single_data()
    except RecursionError:
        raise YamlProblem(None, "not valid YAML (nested too deeply)") from None
    except _Refused as exc:
        mark = exc.problem_mark
        raise YamlProblem(mark.line + 1 if mark else None, exc.problem or "refused") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "unknown problem"
        raise YamlProblem(mark.line + 1 if mark else None, f"not valid YAML ({problem})") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(None, f"not valid YAML ({exc})") from None
    finally:
        if loader is not None:
            loader.dispose()


MAX_INT_DIGITS = 100  # integers in configs are counts and seeds; Python refuses > 4300 digits


class _QuotingDumper(yaml.SafeDumper):
    """SafeDumper whose plain-scalar check knows both YAML 1.1 and 1.2 implicit types."""


_add_core12(_QuotingDumper)


def dump_yaml(data: Any) -> str:
    """``data`` as block YAML that reads back identically (see the module docstring)."""
    return yaml.dump(data, Dumper=_QuotingDumper, sort_keys=False, allow_unicode=False)


__all__ = ["MAX_DEPTH", "StrictLoader", "YamlProblem", "dump_yaml", "parse_yaml"]
