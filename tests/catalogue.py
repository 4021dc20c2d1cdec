"""The bad-input catalogue: every malformed data file and config the tool must reject with
a one-line error. ``docs/bad-input.md`` is generated from this list:

    python -m tests.catalogue > docs/bad-input.md

and a test checks the two agree.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DataCase:
    id: str
    what: str
    content: bytes | None  # None: the path does not exist / is a directory (see kind)
    message: str  # fragment of the error
    line: int | None  # expected line number in "file:line:", None for file-level errors
    dataset: dict = field(default_factory=dict)  # extra keys of the files dataset
    group: bytes | None = None  # content of <file>.query
    kind: str = "file"  # file | missing | directory


def _gz(b: bytes) -> bytes:
    return gzip.compress(b)


def _truncated(compress, n=20000) -> bytes:
    blob = compress(b"1 qid:1 1:1 2:0.5\n" * n)
    return blob[: len(blob) // 2]


DATA_CASES = [
    DataCase("bad-label", "label is not a number", b"x qid:1 1:1\n", "bad label", 1),
    DataCase("label-garbage", "label with trailing garbage", b"1 qid:1 1:1\n1x qid:1 1:1\n", "bad label", 2),
    DataCase("nan-label", "label NaN", b"nan qid:1 1:1\n", "not a finite number", 1),
    DataCase("inf-label", "label inf", b"1 qid:1 1:1\ninf qid:1 1:1\n", "not a finite number", 2),
    DataCase("idx-no-value", "`idx:` without a value", b"1 qid:1 1:\n", "bad feature token", 1),
    DataCase("value-no-idx", "`:value` without an index", b"1 qid:1 :5\n", "bad feature token", 1),
    DataCase("no-colon", "token without a colon", b"1 qid:1 1:1 7\n", "bad feature token", 1),
    DataCase("two-colons", "token with two colons", b"1 qid:1 1:2:3\n", "bad feature token", 1),
    DataCase("colons-cancel", "a missing and an extra colon in one line", b"1 qid:1 1:2 3:4:5 6\n", "bad feature token", 1),
    DataCase("index-not-integer", "index is not a number", b"1 qid:1 a:1\n", "bad feature index", 1),
    DataCase("index-fractional", "index 1.5", b"1 qid:1 1.5:1\n", "not an integer", 1),
    DataCase("value-not-number", "value is not a number", b"1 qid:1 1:abc\n", "bad feature value", 1),
    DataCase("index-zero", "index 0 in a 1-based dataset", b"1 qid:1 0:1\n", "below the index base", 1),
    DataCase("index-negative", "negative index", b"1 qid:1 -3:1\n", "below the index base", 1),
    DataCase("index-beyond", "index beyond the declared feature count", b"1 qid:1 1:1\n1 qid:1 6:1\n", "beyond the declared feature count", 2),
    DataCase("index-huge", "index 10^12 (must not allocate)", b"1 qid:1 1000000000000:1\n", "beyond the declared feature count", 1),
    DataCase("value-nan", "feature value NaN", b"1 qid:1 1:nan\n", "non-finite", 1),
    DataCase("value-inf", "feature value -inf", b"1 qid:1 2:-inf\n", "non-finite", 1),
    DataCase("value-overflow", "feature value 1e999 (overflows)", b"1 qid:1 2:1e999\n", "non-finite", 1),
    DataCase("duplicate-feature", "a feature twice in one line", b"1 qid:1 2:1 3:1 2:5\n", "appears twice", 1),
    DataCase("missing-qid", "a line without `qid:`", b"1 qid:1 1:1\n0 1:1\n", "missing qid", 2),
    DataCase("empty-qid", "`qid:` with no id", b"1 qid: 1:1\n", "empty qid", 1),
    DataCase("split-qid", "a qid that reappears after another", b"1 qid:1 1:1\n1 qid:2 1:1\n0 qid:1 1:1\n", "first line was 1", 3),
    DataCase("missing-comment-qid", "Yandex-style file, a line without `# qid`", b"1 1:1 # 5\n0 1:1\n", "missing qid", 2, {"qid": "comment"}),
    DataCase("null-no-fill", "LETOR `NULL` without null_value", b"1 qid:1 1:NULL\n", "NULL value", 1),
    DataCase("empty-file", "empty file", b"", "no data lines", None),
    DataCase("only-comments", "only comments and blank lines", b"# header\n\n   \n", "no data lines", None),
    DataCase("binary-garbage", "binary garbage", b"\x00\xff\xfe\x01\x02 qid:1\n", "bad label", 1),
    DataCase("utf16", "UTF-16 text (wrong encoding)", "1 qid:1 1:1\n".encode("utf-16"), "bad label", 1),
    DataCase("latin1-token", "latin-1 byte inside a value", "1 qid:1 1:caf\xe9\n".encode("latin-1"), "bad feature value", 1),
    DataCase("cr-only", "old Mac line endings (CR only): one long line", b"1 qid:1 1:1\r0 qid:1 2:1\r", "bad feature token", 1),
    DataCase("huge-line", "a 10 MB single token (error stays one short line)", b"1 qid:1 " + b"x" * 10_000_000 + b"\n", "bad feature token", 1),
    DataCase("truncated-gz", "truncated gzip", _truncated(gzip.compress), "truncated or corrupt", None),
    DataCase("truncated-bz2", "truncated bzip2", _truncated(bz2.compress), "truncated or corrupt", None),
    DataCase("truncated-xz", "truncated xz", _truncated(lzma.compress), "truncated or corrupt", None),
    DataCase("group-zero", "group file with a 0 count", b"1 1:1\n", "must be positive", 1, {"qid": "group"}, b"0\n1\n"),
    DataCase("group-not-integer", "group file with a non-integer count", b"1 1:1\n0 1:1\n", "not an integer", 2, {"qid": "group"}, b"1\nx\n"),
    DataCase("group-too-many", "group file declares more documents than the data has", b"1 1:1\n0 1:1\n", "declares 5 documents", None, {"qid": "group"}, b"2\n3\n"),
    DataCase("group-too-few", "data has more lines than the group file declares", b"1 1:1\n0 1:1\n2 1:1\n", "more data lines", 3, {"qid": "group"}, b"1\n1\n"),
    DataCase("missing-file", "the data file does not exist", None, "does not exist", None, kind="missing"),
    DataCase("directory", "a directory where a file should be", None, "is a directory", None, kind="directory"),
]


@dataclass(frozen=True)
class ConfigCase:
    id: str
    what: str
    text: str
    key: str | None  # key path named in the error (None: file-level)
    message: str


GOOD = """experiment: demo
dataset: {kind: separable, queries: 20}
learners:
  slam: {type: slam-perceptron}
"""


def _learner(body: str) -> str:
    return GOOD.replace("{type: slam-perceptron}", body)


CONFIG_CASES = [
    ConfigCase("unknown-key", "unknown top-level key", GOOD + "learning_rate: 1\n", "learning_rate", "unknown key"),
    ConfigCase("unknown-nested-key", "unknown key inside a section", GOOD.replace("queries: 20", "queries: 20, docz: 3"), "dataset.docz", "unknown key"),
    ConfigCase("wrong-type", "a string where a number is expected", GOOD.replace("queries: 20", "queries: many"), "dataset.queries", "valid integer"),
    ConfigCase("unknown-learner", "unknown learner type", _learner("{type: svm}"), "learners.slam.type", "unknown value 'svm'"),
    ConfigCase("unknown-metric", "unknown metric name", GOOD + "metrics: {names: [ndcg@10, mrr]}\n", "metrics.names", "unknown metric"),
    ConfigCase("bad-cutoff", "metric cut-off 0", GOOD + "metrics: {names: [ndcg@0]}\n", "metrics.names", "positive integer"),
    ConfigCase("negative-rate", "negative learning rate", _learner("{type: slam-perceptron, step: {eta: -0.1}}"), "learners.slam.step.eta", "greater than 0"),
    ConfigCase("infinite-rate", "learning rate .inf", _learner("{type: listnet, step: {eta: .inf}}"), "learners.slam.step.eta", "finite"),
    ConfigCase("bad-ties", "unknown tie policy", GOOD + "metrics: {ties: sideways}\n", "metrics.ties", "input-order"),
    ConfigCase("keep-probability", "keep_probability above 1", GOOD + "protocol: {keep_probability: 1.5}\n", "protocol.keep_probability", "less than or equal"),
    ConfigCase("negative-seed", "negative seed", GOOD + "seed: -1\n", "seed", "greater than or equal"),
    ConfigCase("bad-feedback", "feedback mode `top`", GOOD + "protocol: {feedback: top}\n", "protocol.feedback", "top-K"),
    ConfigCase("unknown-dataset-kind", "unknown dataset kind", GOOD.replace("kind: separable", "kind: magic"), "dataset.kind", "separable"),
    ConfigCase("unknown-registry-name", "misspelt registry dataset", GOOD.replace("{kind: separable, queries: 20}", "{kind: registry, name: msrl-web10k, root: x}"), "dataset.name", "unknown dataset"),
    ConfigCase("missing-dataset-path", "registry dataset not downloaded", GOOD.replace("{kind: separable, queries: 20}", "{kind: registry, name: mslr-web10k, root: /nonexistent, folds: [1]}"), None, "Fold1/train.txt but it does not exist"),
    ConfigCase("missing-learners", "no learners", "experiment: x\ndataset: {kind: separable}\n", "learners", "Field required"),
    ConfigCase("bad-cost-matrix", "ragged cost matrix", _learner("{type: ogd, surrogate: ordinal, cost: [[0, 1], [1]]}"), "learners.slam.cost", "square"),
    ConfigCase("loss-scaled-listnet", "loss_scaled for a learner without a ranking loss", _learner("{type: listnet, step: {loss_scaled: true}}"), "learners.slam.step", "ranking loss"),
    ConfigCase("measure-ap-at-k", "learner measure ap@5", _learner("{type: slam-perceptron, measure: ap@5}"), "learners.slam.measure", "ndcg@K"),
    ConfigCase("alias-bomb", "YAML alias bomb", 'a: &a ["x", "x"]\nb: &b [*a, *a]\nc: [*b, *b]\n', None, "aliases"),
    ConfigCase("deep-nesting", "5,000 nested YAML lists", "a: " + "[" * 5000 + "]" * 5000 + "\n", None, "nested more than 64 levels"),
    ConfigCase("python-tag", "YAML tag constructing a Python object", "experiment: !!python/object/apply:os.system ['echo hi']\n", None, "not valid YAML"),
    ConfigCase("not-a-mapping", "a YAML list instead of a mapping", "- a\n- b\n", None, "mapping"),
]


def markdown() -> str:
    lines = [
        "# Bad input the tool rejects",
        "",
        "Generated from `tests/catalogue.py` (`python -m tests.catalogue > docs/bad-input.md`);",
        "`tests/test_catalogue.py` runs every case through `ltr run` and checks the one-line",
        "error, the exit status 1 and that no finished-looking run directory is left.",
        "",
        "## Data files (`dataset: {kind: files, features: 5}` unless noted)",
        "",
        "| case | input | error names | message contains |",
        "|---|---|---|---|",
    ]
    for c in DATA_CASES:
        where = f"file:{c.line}" if c.line else "file"
        extra = f" ({', '.join(f'{k}: {v}' for k, v in c.dataset.items())})" if c.dataset else ""
        lines.append(f"| `{c.id}` | {c.what}{extra} | {where} | {c.message} |")
    lines += ["", "## Configs", "", "| case | input | key path | message contains |", "|---|---|---|---|"]
    for c in CONFIG_CASES:
        lines.append(f"| `{c.id}` | {c.what} | {c.key or '(file)'} | {c.message} |")
    lines += [
        "",
        "Accepted on purpose (documented behaviour, not errors): a UTF-8 byte-order mark,",
        "CRLF, tabs, blank lines, scientific notation, labels like 0.5 or -1, metric cut-offs",
        "larger than a query (NDCG@k uses min(k, m)), `top-K` feedback with K larger than a",
        "query (all its labels are revealed).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
