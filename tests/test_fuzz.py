"""Fuzzing with a fixed budget: arbitrary input must end in the tool's own error types.

The reader may raise only :class:`DataFormatError`; the config loader only
:class:`ConfigError`. Anything else escaping is a bug that would show as a traceback.
"""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ltr_cli.config.experiment import load_config, parse_config
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.errors import ConfigError, DataFormatError

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALID = (
    b"2 qid:7 1:0.5 3:1e-3 # docid = GX1\n"
    b"0 qid:7 2:-1.5 5:3\n"
    b"1 qid:8 1:1 2:2 3:3 4:4 5:5\n"
    b"0.5 qid:8 4:2.6864e-05\n"
)


def read_all(path, **kw):
    kw.setdefault("n_features", 5)
    for q in SVMLightReader(path, ReaderOptions(**kw)):
        assert q.X.shape == (q.m, kw["n_features"])


@FUZZ
@given(st.binary(max_size=2000), st.sampled_from(["auto", "token", "comment", "group"]), st.booleans())
def test_reader_on_arbitrary_bytes(tmp_path, blob, qid, compress):
    path = tmp_path / "f.txt"
    path.write_bytes(gzip.compress(blob) if compress else blob)
    (tmp_path / "f.txt.query").write_bytes(b"2\n2\n")
    try:
        read_all(path, qid_source=qid)
    except DataFormatError:
        pass


_TOKENS = st.sampled_from([b"", b" ", b":", b"::", b"qid:", b"#", b"\t", b"\r", b"\n", b"NULL", b"nan",
                           b"-", b"+", b"e", b"1e999", b"0", b"6", b"-1", b"1.5", b"\x00", b"\xff", b"x"])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.integers(0, 3), _TOKENS), max_size=6))
def test_reader_on_mutated_valid_files(tmp_path, edits):
    data = bytearray(VALID)
    for pos, cut, token in edits:
        pos = min(pos, len(data))
        data[pos:pos + cut] = token
    path = tmp_path / "m.txt"
    path.write_bytes(bytes(data))
    try:
        read_all(path)
    except DataFormatError:
        pass


@FUZZ
@given(st.text(max_size=400))
def test_config_loader_on_arbitrary_text(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    try:
        load_config(path)
    except ConfigError:
        pass


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["separable", "registry", "files", "shaped",
                                                           "slam-perceptron", "rtopkf", "ogd", "ndcg@10"]))
_trees = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                       st.dictionaries(st.text(max_size=10), kids, max_size=4)),
                      max_leaves=20)
_keys = st.sampled_from(["experiment", "dataset", "learners", "protocol", "metrics", "seed", "seeds",
                         "kind", "type", "queries", "names", "step", "eta"])


@settings(FUZZ, max_examples=60)  # each opener at the deepest nesting below, every time
@given(st.integers(1, 3000), st.sampled_from(["[", "{a: ", "- "]))
@example(3000, "[")
@example(3000, "{a: ")
@example(3000, "- ")
def test_config_loader_on_deep_nesting(tmp_path, depth, opener):
    closer = {"[": "]", "{a: ": "}", "- ": ""}[opener]
    body = (opener * depth + "1" + closer * depth) if opener != "- " else "".join(
        "  " * i + "- " + ("\n" if i < depth - 1 else "1\n") for i in range(min(depth, 300)))
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + body if opener != "- " else "a:\n" + body)
    try:
        load_config(path)
    except ConfigError:
        pass


@FUZZ
@given(st.dictionaries(_keys, _trees, max_size=6))
def test_config_validation_on_arbitrary_structures(data):
    try:
        parse_config(data, "fuzz.yaml")
    except ConfigError:
        pass
