"""Property test: random files with random combinations of quirks read exactly like the
straightforward reference parse."""

from __future__ import annotations

import bz2
import gzip
import lzma

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from tests.reference import parse_reference

D = 8


@st.composite
def quirky_file(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    style = draw(st.sampled_from(["token", "comment", "group"]))
    base = draw(st.sampled_from([0, 1]))
    null_every = draw(st.sampled_from([0, 3]))  # 0: no NULL values; 3: some, filled with -7
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    fmt = draw(st.sampled_from(["{:.6f}", "{:.3e}", "{!r}", "{:g}"]))
    bom = draw(st.booleans())
    lines = []
    sizes = []
    for q in range(draw(st.integers(1, 6))):
        qid = str(int(rng.integers(1, 10**6))) + str(q)  # unique, unsorted
        sizes.append(int(rng.integers(1, 6)))
        for _ in range(sizes[-1]):
            label = rng.choice([0, 1, 2, 3, 4, 0.5, -1])
            lab = str(int(label)) if float(label).is_integer() else repr(float(label))
            dense = rng.random() < 0.5
            cols = np.arange(D) if dense else np.sort(rng.choice(D, int(rng.integers(0, D + 1)), replace=False))
            vals = [fmt.format(float(rng.normal() * 10.0 ** rng.integers(-4, 4))) for _ in cols]
            if null_every:
                vals = ["NULL" if rng.integers(null_every) == 0 else v for v in vals]
            feats = sep.join(f"{c + base}:{v}" for c, v in zip(cols, vals))
            if style == "group":
                line = f"{lab}{sep}{feats}"
            elif style == "token":
                tail = f" #docid = GX{q} inc = 0.1 prob = 0.2" if rng.random() < 0.5 else ""
                line = f"{lab}{sep}qid:{qid}{sep}{feats}{tail}"
            else:
                line = f"{lab}{sep}{feats} # {qid}"
            if rng.random() < 0.2:
                line += "   "
            lines.append(line)
            if rng.random() < 0.1:
                lines.append("")
            if rng.random() < 0.1:
                lines.append("# comment line")
    text = ("\ufeff" if bom else "") + newline.join(lines) + newline
    compress = draw(st.sampled_from([None, gzip.compress, bz2.compress, lzma.compress]))
    return text, style, compress, base, null_every, sizes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(quirky_file())
def test_reader_equals_reference(tmp_path, case):
    text, style, compress, base, null_every, sizes = case
    raw = text.encode("utf-8")
    path = tmp_path / "f.dat"
    path.write_bytes(compress(raw) if compress else raw)
    group = tmp_path / "f.dat.query"
    group.unlink(missing_ok=True)
    if style == "group":
        group.write_text("".join(f"{n}\n" for n in sizes))
    opts = ReaderOptions(n_features=D, index_base=base, qid_source="auto",
                         null_value=-7.0 if null_every else None)
    got = list(SVMLightReader(path, opts))
    ref = parse_reference(text.replace("NULL", "-7"), D, base=base, qid_from=style, group_sizes=sizes)
    assert [q.qid for q in got] == [r[0] for r in ref]
    for q, (_, X, y) in zip(got, ref):
        np.testing.assert_array_equal(q.X, X)
        np.testing.assert_array_equal(q.y, y)
