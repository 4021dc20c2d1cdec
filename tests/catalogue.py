"""The bad-input catalogue: every malformed data file, config and run folder the tool must
reject with a one-line error. ``docs/bad-input.md`` is generated from this list:

    python -m tests.catalogue > docs/bad-input.md

and a test checks the two agree.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class DataCase:
    id: str
    what: str
    content: bytes | None  # None: the path does not exist / is a directory (see kind)
    message: str  # fragment of the error
    line: int | None  # expected line number in "file:line:", None for file-level errors
    dataset: dict = field(default_factory=dict)  # extra keys of the files dataset
    group: bytes | None = None  # content of <file>.query
    kind: str = "file"  # file | missing | directory | fifo | device


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
    DataCase("binary-garbage", "binary garbage", b"\x00\xff\xfe\x01\x02 qid:1\n", "character U+0000 (NUL) outside a '#' comment", 1),
    DataCase("utf16", "UTF-16 text (wrong encoding)", "1 qid:1 1:1\n".encode("utf-16"), "byte 0xff (not ASCII, not UTF-8)", 1),
    DataCase("latin1-token", "latin-1 byte inside a value", "1 qid:1 1:caf\xe9\n".encode("latin-1"), "byte 0xe9 (not ASCII, not UTF-8)", 1),
    DataCase("cr-only", "old Mac line endings (CR only): one long line", b"1 qid:1 1:1\r0 qid:1 2:1\r", "character U+000D (lone carriage return)", 1),
    # one grammar for separators, numbers and qids (issue 31)
    DataCase("nbsp-separator", "a no-break space after the qid (once glued `1:0.9` into the qid)", "1 qid:7 1:1\n0 qid:7\u00a01:0.9\n".encode(), "character U+00A0 (no-break space)", 2),
    DataCase("vertical-tab", "a vertical tab between features", b"1 qid:7 1:1\x0b2:1\n", "character U+000B (vertical tab)", 1),
    DataCase("underscore-label", "label `1_0` (Python's float() reads 10)", b"1 qid:1 1:1\n1_0 qid:1 1:1\n", "bad label", 2),
    DataCase("underscore-value", "feature value `0_5` (Python's float() reads 5.0)", b"1 qid:1 1:0_5\n", "bad feature value", 1),
    DataCase("underscore-index", "feature index `1_0`", b"1 qid:1 1_0:1\n", "bad feature index", 1),
    DataCase("qid-not-integer", "`qid:a7` (qids are integers compared by value)", b"1 qid:a7 1:1\n", "is not an integer", 1),
    DataCase("qid-respelt-split", "`qid:1`, `qid:2`, `qid:01` (01 is qid 1 again)", b"1 qid:1 1:1\n1 qid:2 1:1\n0 qid:01 1:1\n", "qid 1 reappears", 3),
    DataCase("huge-line", "a 10 MB single token (error stays one short line)", b"1 qid:1 " + b"x" * 10_000_000 + b"\n", "max_line_bytes", 1),
    DataCase("no-newlines", "2 MB of tokens without a line break", b"1 qid:1 " + b"1:1 " * 500_000, "max_line_bytes", 1),
    DataCase("long-line-limit", "a line over a lowered `max_line_bytes`", b"1 qid:1 1:1\n0 qid:1 1:1 2:2 3:3\n", "line longer than 16 bytes", 2, {"max_line_bytes": 16}),
    DataCase("gz-bomb", "gzip that expands 500x (decompression bomb)", gzip.compress(b"0 qid:1 1:0\n" * 250_000, 9), "max_decompression_ratio", None),
    DataCase("zero-bomb", "gzip of zero bytes, no line breaks", gzip.compress(bytes(50_000_000), 9), "max_", 1),
    DataCase("query-over-budget", "a query whose dense rows exceed `max_query_mb`", b"1 qid:1 1:1\n" * 5 + b"0 qid:2 1:1\n", "max_query_mb", 1, {"max_query_mb": 0.0001}),
    DataCase("label-too-large", "label 1024 (gain 2^r - 1 overflows)", b"1 qid:1 1:1\n1024 qid:1 1:1\n", "too large for the gain", 2),
    DataCase("fifo", "a FIFO where a data file should be (reading would block)", None, "not a regular file", None, kind="fifo"),
    DataCase("device", "a link to /dev/zero (endless input)", None, "not a regular file", None, kind="device"),
    DataCase("truncated-gz", "truncated gzip", _truncated(gzip.compress), "truncated or corrupt", None),
    DataCase("truncated-bz2", "truncated bzip2", _truncated(bz2.compress), "truncated or corrupt", None),
    DataCase("truncated-xz", "truncated xz", _truncated(lzma.compress), "truncated or corrupt", None),
    DataCase("group-zero", "group file with a 0 count", b"1 1:1\n", "must be positive", 1, {"qid": "group"}, b"0\n1\n"),
    DataCase("group-not-integer", "group file with a non-integer count", b"1 1:1\n0 1:1\n", "not an integer", 2, {"qid": "group"}, b"1\nx\n"),
    DataCase("group-underscore", "group file count `1_0` (Python's int() reads 10)", b"1 1:1\n" * 11, "not an integer", 2, {"qid": "group"}, b"1\n1_0\n"),
    DataCase("group-too-many", "group file declares more documents than the data has", b"1 1:1\n0 1:1\n", "declares 5 documents", None, {"qid": "group"}, b"2\n3\n"),
    DataCase("group-too-few", "data has more lines than the group file declares", b"1 1:1\n0 1:1\n2 1:1\n", "more data lines", 3, {"qid": "group"}, b"1\n1\n"),
    DataCase("missing-file", "the data file does not exist", None, "does not exist", None, kind="missing"),
    DataCase("directory", "a directory where a file should be", None, "is a directory", None, kind="directory"),
]


@dataclass(frozen=True)
class ScoreCase:
    """A score file given to ``ltr eval`` with :data:`SCORE_DATA`."""

    id: str
    what: str
    content: bytes
    message: str
    line: int | None


# two queries of the LETOR layout (docid comments), five documents
SCORE_DATA = (b"2 qid:10 1:1 #docid = a\n0 qid:10 1:2 #docid = b\n1 qid:10 1:3 #docid = c\n"
              b"0 qid:2 1:1 #docid = a\n1 qid:2 1:2 #docid = d\n")

SCORE_CASES = [
    ScoreCase("score-extra-tokens", "a second token on a line (once ignored: the first was read)", b"0.9 7\n0.5\n0.1\n0.2\n0.3\n", "a line of 2 fields", 1),
    ScoreCase("score-underscore", "score `0_5` (Python's float() reads 5.0)", b"0.9\n0_5\n0.1\n0.2\n0.3\n", "bad score '0_5'", 2),
    ScoreCase("score-nbsp", "a no-break space after a score", "0.9\n0.5\u00a0\n0.1\n0.2\n0.3\n".encode(), "character U+00A0", 2),
    ScoreCase("score-blank-line", "a blank line", b"0.9\n\n0.1\n0.2\n0.3\n", "score is empty", 2),
    ScoreCase("ranklib-wrong-qid", "RankLib `qid<TAB>index<TAB>score` for other data (qid 3 where the data has 2)", b"10\t0\t0.9\n10\t1\t0.5\n10\t2\t0.1\n3\t0\t0.2\n3\t1\t0.3\n", "document 0 of qid 2", 4),
    ScoreCase("ranklib-wrong-order", "RankLib lines out of data-file order", b"10\t1\t0.9\n10\t0\t0.5\n10\t2\t0.1\n2\t0\t0.2\n2\t1\t0.3\n", "document 0 of qid 10", 1),
    ScoreCase("ranklib-mixed", "a RankLib file with a space-separated line", b"10\t0\t0.9\n10 1 0.5\n", "makes this a RankLib score file", 2),
    ScoreCase("trec-unknown-docno", "TREC run `qid Q0 docno rank score tag` naming a document the data lacks", b"10 Q0 a 1 0.9 r\n10 Q0 z 2 0.5 r\n", "docno 'z' is not a document", 2),
    ScoreCase("trec-missing-doc", "TREC run without a line for one document", b"10 Q0 a 1 0.9 r\n10 Q0 b 2 0.5 r\n10 Q0 c 3 0.1 r\n2 Q0 a 1 0.2 r\n", "no line for qid 2 docno d", None),
    ScoreCase("trec-duplicate", "TREC run naming a document twice", b"10 Q0 a 1 0.9 r\n10 Q0 a 2 0.5 r\n", "appears twice", 2),
    ScoreCase("three-spaced-columns", "three space-separated columns (neither RankLib nor TREC)", b"10 0 0.9\n", "a line of 3 fields", 1),
]


@dataclass(frozen=True)
class ConfigCase:
    id: str
    what: str
    text: str
    key: str | None  # key path named in the error (None: file-level)
    message: str
    line: int | None = None  # expected line in "file:line:" (YAML-level errors)


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
    ConfigCase("unknown-learner-key", "a misspelt key of a learner (a did-you-mean from that learner's keys)", GOOD.replace("{type: slam-perceptron}", "{type: slam-perceptron, stpe: {rule: constant}}"), "learners.slam.stpe", "unknown key; did you mean 'step'?"),
    ConfigCase("docs-over-budget", "generated queries too large for memory (`docs: 100000000000`)", GOOD.replace("queries: 20", "queries: 20, docs: 100000000000"), "dataset", "MB per query"),
    ConfigCase("shaped-over-budget", "shaped queries too large for memory", GOOD.replace("kind: separable, queries: 20", "kind: shaped, like: mslr-web10k, queries: 5, docs_per_query: 10000000"), "dataset", "MB per query"),
    ConfigCase("limit-not-positive", "an input bound of 0", GOOD.replace("kind: separable, queries: 20", "kind: files, files: [x.txt], features: 5, max_line_bytes: 0"), "dataset.max_line_bytes", "greater than 0"),
    ConfigCase("wrong-type", "a string where a number is expected", GOOD.replace("queries: 20", "queries: many"), "dataset.queries", "valid integer"),
    ConfigCase("unknown-learner", "unknown learner type", _learner("{type: svm}"), "learners.slam.type", "unknown value 'svm'"),
    ConfigCase("unknown-metric", "unknown metric name", GOOD + "metrics: {names: [ndcg@10, mrr]}\n", "metrics.names", "unknown metric"),
    ConfigCase("bad-cutoff", "metric cut-off 0", GOOD + "metrics: {names: [ndcg@0]}\n", "metrics.names", "positive integer"),
    ConfigCase("bad-metric-parameter", "ERR's gmax 0 (`err@10-gmax=0`)", GOOD + "metrics: {names: [err@10-gmax=0]}\n",
               "metrics.names", "gmax needs one positive integer"),
    ConfigCase("err-gmax-overflow", "ERR's gmax 1024 (`err@10-gmax=1024`: 2^1024 overflows float64; once a traceback)",
               GOOD + "metrics: {names: [ndcg@10, err@10-gmax=1024]}\n", "metrics.names", "gmax must be at most 1023"),
    ConfigCase("unknown-metric-parameter", "a parameter RR does not take (`rr-gmax=2`)",
               GOOD + "metrics: {names: [rr-gmax=2]}\n", "metrics.names", "rr parameters: none"),
    ConfigCase("metric-twice", "AP twice (`ap` and `map`)", GOOD + "metrics: {names: [ap, map]}\n", "metrics.names",
               "listed twice"),
    ConfigCase("negative-rate", "negative learning rate", _learner("{type: slam-perceptron, step: {eta: -0.1}}"), "learners.slam.step.eta", "greater than 0"),
    ConfigCase("infinite-rate", "learning rate .inf", _learner("{type: listnet, step: {eta: .inf}}"), "learners.slam.step.eta", "finite"),
    ConfigCase("bad-ties", "unknown tie policy", GOOD + "metrics: {ties: sideways}\n", "metrics.ties", "input-order"),
    ConfigCase("keep-probability", "keep_probability above 1", GOOD + "protocol: {keep_probability: 1.5}\n", "protocol.keep_probability", "less than or equal"),
    ConfigCase("passes-over-plan", "`passes: 100000000` without max_rounds (once: MemoryError or a segfault planning every pass)", GOOD.replace("queries: 20", "queries: 30") + "protocol: {passes: 100000000}\n", None, "set protocol.max_rounds or fewer protocol.passes"),
    ConfigCase("negative-seed", "negative seed", GOOD + "seed: -1\n", "seed", "greater than or equal"),
    ConfigCase("bad-feedback", "feedback mode `top`", GOOD + "protocol: {feedback: top}\n", "protocol.feedback", "top-K"),
    ConfigCase("unknown-dataset-kind", "unknown dataset kind", GOOD.replace("kind: separable", "kind: magic"), "dataset.kind", "separable"),
    ConfigCase("clicks-two-sources", "a learner's click log both read and generated", GOOD.replace("{type: slam-perceptron}", "{type: ranksvm, clicks: {log: logs, generate: {sessions: 100}}}"), "learners.slam.clicks", "give exactly one of log"),
    ConfigCase("clicks-position-bias-ranksvm", "LightGBM's position-bias correction asked of RankSVM", GOOD.replace("{type: slam-perceptron}", "{type: ranksvm, clicks: {generate: {}, correction: position-bias}}"), "learners.slam", "models the displayed positions"),
    ConfigCase("clicks-select-on-read-log", "selection on clicks with a log read from files (no vali log)", GOOD.replace("{type: slam-perceptron}", "{type: ranksvm, clicks: {log: logs, select: clicks}}"), "learners.slam.clicks", "select: clicks simulates a log of the vali queries"),
    ConfigCase("clicks-bad-policy", "an unknown logging policy", GOOD.replace("{type: slam-perceptron}", "{type: ranksvm, clicks: {generate: {policy: random}}}"), "learners.slam.clicks.generate.policy", "Input should be"),
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
    # strict YAML: repeated keys
    ConfigCase("duplicate-key", "a top-level key twice", GOOD + "seed: 1\nseed: 2\n", None, "duplicate key 'seed' (first at line 5)", 6),
    ConfigCase("duplicate-nested-key", "a key twice inside a flow mapping", GOOD.replace("queries: 20", "queries: 20, queries: 30"), None, "duplicate key 'queries'", 2),
    ConfigCase("duplicate-learner", "a learner name twice", GOOD + "  slam: {type: alg3}\n", None, "duplicate key 'slam' (first at line 4)", 5),
    # strict types and YAML 1.2 numbers and booleans
    ConfigCase("bool-as-int", "`seed: true`", GOOD + "seed: true\n", "seed", "valid integer (got True"),
    ConfigCase("bool-as-float", "a learning rate `true`", _learner("{type: slam-perceptron, step: {eta: true}}"), "learners.slam.step.eta", "valid number (got True"),
    ConfigCase("yes-is-a-string", "`shuffle: yes` (YAML 1.2: a string)", GOOD + "protocol: {shuffle: yes}\n", "protocol.shuffle", "valid boolean (got 'yes'"),
    ConfigCase("underscore-number", "`queries: 1_000` (YAML 1.2: a string)", GOOD.replace("queries: 20", "queries: 1_000"), "dataset.queries", "valid integer (got '1_000'"),
    ConfigCase("float-for-int", "`docs: 1e11` where an integer is expected", GOOD.replace("queries: 20", "queries: 20, docs: 1e11"), "dataset.docs", "integer is written with digits only"),
    ConfigCase("whole-float-for-int", "`queries: 20.0`", GOOD.replace("queries: 20", "queries: 20.0"), "dataset.queries", "valid integer (got 20.0"),
    ConfigCase("quoted-int", "a quoted number `\"20\"`", GOOD.replace("queries: 20", 'queries: "20"'), "dataset.queries", "valid integer (got '20'"),
    ConfigCase("quoted-float", "a quoted number `\"1e-3\"`", _learner('{type: slam-perceptron, step: {eta: "1e-3"}}'), "learners.slam.step.eta", "valid number (got '1e-3'"),
    ConfigCase("sexagesimal", "`max_rounds: 1:30` (YAML 1.1 base 60)", GOOD + "protocol: {max_rounds: 1:30}\n", "protocol.max_rounds", "valid integer (got '1:30'"),
    ConfigCase("bool-index-base", "`index_base: true`", GOOD.replace("{kind: separable, queries: 20}", "{kind: files, files: [x.txt], features: 3, index_base: true}"), "dataset.index_base", "not a boolean"),
    ConfigCase("binary-tag", "YAML 1.1 tag `!!binary`", GOOD.replace("experiment: demo", "experiment: !!binary ZGVtbw=="), None, "not valid YAML", 1),
    ConfigCase("merge-key", "YAML 1.1 merge key `<<`", GOOD + "<<: {seed: 1}\n", "<<", "unknown key"),
    # metric cut-offs: ASCII digits, one spelling each
    ConfigCase("non-ascii-cutoff", "`ndcg@\u0661` (Arabic-Indic digit one)", GOOD + "metrics: {names: [ndcg@1, ndcg@\u0661]}\n", "metrics.names", "ASCII digits"),
    ConfigCase("leading-zero-cutoff", "`ndcg@01` (a second NDCG@1)", GOOD + "metrics: {names: [ndcg@1, ndcg@01]}\n", "metrics.names", "without a leading zero"),
    ConfigCase("non-ascii-measure", "learner measure `ndcg@\u0661`", _learner("{type: slam-perceptron, measure: ndcg@\u0661}"), "learners.slam.measure", "ASCII digits"),
    ConfigCase("non-ascii-feedback", "feedback `top-\u0661`", GOOD + "protocol: {feedback: top-\u0661}\n", "protocol.feedback", "ASCII digits"),
    # names that become paths
    ConfigCase("experiment-path", "`experiment: ../../x/OWNED`", GOOD.replace("experiment: demo", "experiment: ../../x/OWNED"), "experiment", "ASCII letters, digits, '.', '_' or '-'"),
    ConfigCase("experiment-newline", "experiment name with a trailing newline", GOOD.replace("experiment: demo", 'experiment: "demo\\n"'), "experiment", "ASCII letters"),
    ConfigCase("experiment-hidden", "`experiment: .demo`", GOOD.replace("experiment: demo", "experiment: .demo"), "experiment", "not starting with '.' or '-'"),
    ConfigCase("experiment-too-long", "a 101-character experiment name", GOOD.replace("experiment: demo", "experiment: " + "x" * 101), "experiment", "1 to 100"),
    ConfigCase("experiment-not-string", "`experiment: 2024` (an integer)", GOOD.replace("experiment: demo", "experiment: 2024"), "experiment", "valid string"),
    ConfigCase("learner-name-path", "learner name `a/b`", GOOD.replace("  slam:", "  a/b:"), "learners", "learner name 'a/b'"),
    ConfigCase("label-newline", "a legend label with a newline", _learner('{type: slam-perceptron, label: "a\\nb"}'), "learners.slam.label", "one line"),
    # click feedback and uniform sampling: keys that go together
    ConfigCase("clicks-without-feedback", "a `clicks:` block under `feedback: auto`", GOOD + "protocol: {clicks: {model: navigational}}\n", "protocol.clicks", "is set but protocol.feedback is auto"),
    ConfigCase("feedback-clicks-without-model", "`feedback: clicks` without a `clicks:` block", GOOD + "protocol: {feedback: clicks}\n", "protocol.clicks", "missing; protocol.feedback: clicks needs the click model"),
    ConfigCase("clicks-eta-on-cascade", "`eta` for a cascade click model", GOOD + "protocol: {feedback: clicks, clicks: {model: navigational, eta: 2}}\n", "protocol.clicks.eta", "navigational is a cascade"),
    ConfigCase("clicks-whole-list-metric", "`ap` under click feedback (it reads the whole ranking)", GOOD + "protocol: {feedback: clicks, clicks: {model: perfect}}\nmetrics: {names: [ndcg@10, ap]}\n", "metrics.names", "ap reads the whole ranking"),
    ConfigCase("uniform-without-max-rounds", "`sampling: uniform` without `max_rounds`", GOOD + "protocol: {sampling: uniform}\n", "protocol.max_rounds", "missing; sampling: uniform"),
    ConfigCase("uniform-with-shuffle", "`shuffle` under `sampling: uniform`", GOOD + "protocol: {sampling: uniform, max_rounds: 9, shuffle: true}\n", "protocol.shuffle", "applies to sampling: passes"),
]


# --- run folders read back by `ltr plot` and `ltr report` ------------------------------------

def _json_edit(name: str, key: str | tuple[str, ...], value) -> Callable[[Path], None]:
    """Set ``key`` (dotted, or a tuple of keys) of the run's JSON file ``name`` to ``value``."""
    def edit(run: Path) -> None:
        data = json.loads((run / name).read_text())
        node = data
        *parents, last = key.split(".") if isinstance(key, str) else key
        for part in parents:
            node = node[part]
        node[last] = value
        (run / name).write_text(json.dumps(data))
    return edit


def _bytes_edit(name: str, content: bytes) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        (run / name).write_bytes(content)
    return edit


def _config_edit(old: str, new: str) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        text = (run / "config.yaml").read_text()
        assert old in text, old
        (run / "config.yaml").write_text(text.replace(old, new, 1))
    return edit


def _rounds_edit(change: Callable) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        import pandas as pd

        change(pd.read_parquet(run / "rounds.parquet")).to_parquet(run / "rounds.parquet", index=False)
    return edit


def _truncate(name: str, keep: int) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        (run / name).write_bytes((run / name).read_bytes()[:keep])
    return edit


@dataclass(frozen=True)
class ResultsCase:
    id: str
    what: str
    file: str  # the run file that is edited, and named in the error
    edit: Callable[[Path], None]  # applied to a real run folder (experiment demo, learner slam)
    message: str  # fragment of the error


RESULTS_CASES = [
    # names that would become file names outside the plot folder
    ResultsCase("config-experiment-path", "`experiment: ../../../../x/OWNED`", "config.yaml", _config_edit("experiment: demo", "experiment: ../../../../x/OWNED"), "'experiment' must be 1 to 100 ASCII letters"),
    ResultsCase("config-experiment-newline", "experiment name with a trailing newline", "config.yaml", _config_edit("experiment: demo", 'experiment: "demo\\n"'), "'experiment' must be"),
    ResultsCase("config-learner-name", "learner name `../slam`", "config.yaml", _config_edit("  slam:\n", "  ../slam:\n"), "key '../slam' of 'learners'"),
    ResultsCase("summary-experiment-path", "summary `experiment: ../../x`", "summary.json", _json_edit("summary.json", "experiment", "../../x"), "'experiment' must be"),
    ResultsCase("summary-learner-path", "summary `learner: ../../x`", "summary.json", _json_edit("summary.json", "learner", "../../x"), "'learner' must be"),
    ResultsCase("rounds-column-path", "a rounds column named `../../x`", "rounds.parquet", _rounds_edit(lambda df: df.rename(columns={"ap": "../../x"})), "column '../../x' is neither a round column nor a metric name"),
    ResultsCase("summary-metric-path", "a summary metric named `../x`", "summary.json", _json_edit("summary.json", ("metrics", "../x"), {}), "key '../x' of 'metrics' is not a metric name"),
    # config.yaml: the config loader's rules
    ResultsCase("config-duplicate-key", "config.yaml with a key twice", "config.yaml", _config_edit("seed: 0\n", "seed: 0\nseed: 1\n"), "duplicate key 'seed' (first at line 3)"),
    ResultsCase("config-python-tag", "config.yaml with a Python tag", "config.yaml", _config_edit("seed: 0", "seed: !!python/object/apply:os.system [echo OWNED]"), "not valid YAML"),
    ResultsCase("config-alias", "config.yaml with an alias", "config.yaml", _config_edit("seed: 0\n", "seed: &s 0\nseeds: *s\n"), "aliases"),
    ResultsCase("config-empty", "empty config.yaml", "config.yaml", _bytes_edit("config.yaml", b""), "config file is not a mapping"),
    ResultsCase("config-no-experiment", "config.yaml without `experiment`", "config.yaml", _config_edit("experiment: demo\n", ""), "'experiment' is missing"),
    # summary.json: wrong JSON types
    ResultsCase("summary-seed-string", '`"seed": "x"`', "summary.json", _json_edit("summary.json", "seed", "x"), "'seed' must be an integer"),
    ResultsCase("summary-seed-bool", '`"seed": true`', "summary.json", _json_edit("summary.json", "seed", True), "'seed' must be an integer"),
    ResultsCase("summary-rounds-null", '`"rounds": null`', "summary.json", _json_edit("summary.json", "rounds", None), "'rounds' must be an integer"),
    ResultsCase("summary-metrics-list", "`metrics` is a list", "summary.json", _json_edit("summary.json", "metrics", [1, 2]), "'metrics' must be a mapping"),
    ResultsCase("summary-metric-string", "a metric value is a string", "summary.json", _json_edit("summary.json", "metrics.ap.last10_mean_of_time_average", "0.9"), "'metrics.ap.last10_mean_of_time_average' must be a number"),
    ResultsCase("summary-nonfinite-string", '`"nonfinite_round": "3"`', "summary.json", _json_edit("summary.json", "nonfinite_round", "3"), "'nonfinite_round' must be an integer"),
    ResultsCase("summary-theory-bound", "`theory.bound` is a string", "summary.json", _json_edit("summary.json", "theory.bound", "big"), "'theory.bound' must be a mapping"),
    ResultsCase("summary-not-object", "summary.json is a JSON list", "summary.json", _bytes_edit("summary.json", b"[1, 2]"), "summary file is not a mapping"),
    ResultsCase("summary-not-utf8", "summary.json in Latin-1", "summary.json", _bytes_edit("summary.json", '{"learner": "caf\xe9"}'.encode("latin-1")), "not UTF-8 text"),
    ResultsCase("summary-truncated", "truncated summary.json", "summary.json", _truncate("summary.json", 40), "not valid JSON"),
    ResultsCase("summary-deep", "100,000 nested JSON lists", "summary.json", _bytes_edit("summary.json", b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    # manifest.json
    ResultsCase("manifest-label-number", '`"learner_label": 5`', "manifest.json", _json_edit("manifest.json", "learner_label", 5), "'learner_label' must be a string"),
    ResultsCase("manifest-label-newline", "a legend label with a newline", "manifest.json", _json_edit("manifest.json", "learner_label", "a\nb"), "one line"),
    ResultsCase("manifest-conventions-list", "`learner_conventions` is a list", "manifest.json", _json_edit("manifest.json", "learner_conventions", ["x"]), "'learner_conventions' must be a mapping"),
    # rounds.parquet
    ResultsCase("rounds-garbage", "rounds.parquet is not Parquet", "rounds.parquet", _bytes_edit("rounds.parquet", b"PAR1 this is not parquet PAR1"), "not a readable Parquet file"),
    ResultsCase("rounds-truncated", "truncated rounds.parquet", "rounds.parquet", _truncate("rounds.parquet", 200), "not a readable Parquet file"),
    ResultsCase("rounds-no-t", "rounds.parquet without `t`", "rounds.parquet", _rounds_edit(lambda df: df.drop(columns=["t"])), "neither a 't'"),
    ResultsCase("rounds-t-float", "`t` holds floats", "rounds.parquet", _rounds_edit(lambda df: df.assign(t=df["t"].astype("float64"))), "column 't' must hold integers"),
    ResultsCase("rounds-metric-strings", "a metric column holds strings", "rounds.parquet", _rounds_edit(lambda df: df.assign(ap=df["ap"].astype(str))), "column 'ap' must hold numbers"),
    ResultsCase("rounds-qid-lists", "`qid` holds lists", "rounds.parquet", _rounds_edit(lambda df: df.assign(qid=[[1, 2]] * len(df))), "column 'qid' must hold strings"),
    ResultsCase("rounds-updated-int", "`updated` holds integers", "rounds.parquet", _rounds_edit(lambda df: df.assign(updated=df["updated"].astype("int64"))), "column 'updated' must hold true/false values"),
]


@dataclass(frozen=True)
class StateCase:
    """Hostile or changed state around a run (not one input file): what the tool does,
    and the test (``file::function``) that fails if that protection goes away."""

    id: str
    what: str
    outcome: str
    test: str


STATE_CASES = [
    StateCase("pickle-checkpoint", "a pickle (code on unpickling) planted as `.<run-id>.checkpoint`",
              "`run --resume`: one line, nothing executed; `sweep --status`: \"checkpoint unusable\"",
              "tests/test_resume.py::test_damaged_or_crafted_checkpoint_is_refused_in_one_line_and_never_executed"),
    StateCase("planted-checkpoint-status", "pickles planted for every run of a sweep",
              "`sweep --status` reads JSON only, runs nothing", "tests/test_integrity.py::test_sweep_status_never_unpickles_a_planted_checkpoint"),
    StateCase("checkpoint-other-data", "a killed run's checkpoint, then the data file replaced",
              "`run --resume`: one line (the data changed since the checkpoint)",
              "tests/test_integrity.py::test_resume_refuses_a_checkpoint_taken_on_other_data"),
    StateCase("finished-run-other-data", "a finished run, then the data relabelled (same size, same mtime)",
              "`run --resume` and `sweep` refuse to count it as done; a new run gives the new numbers",
              "tests/test_integrity.py::test_relabelled_file_with_restored_mtime_is_never_served_stale"),
    StateCase("finished-cv-other-data", "a finished CV run, then one fold file edited",
              "`run --resume`: one line", "tests/test_integrity.py::test_batch_resume_refuses_a_finished_cv_run_whose_files_changed"),
    StateCase("foreign-fold-checkpoint", "another batch run's `.<run>.folds.json` renamed to this run's name (or its run id edited too)",
              "`run --resume`: one line (another run / another learner config); nothing fitted or written",
              "tests/test_fold_checkpoints.py::test_another_runs_checkpoint_renamed_to_this_run_is_refused"),
    StateCase("damaged-fold-checkpoint", "a fold checkpoint whose fold row lacks a test metric (once a KeyError), or with crafted fields",
              "`run --resume`: one line naming the checkpoint, which says to delete it",
              "tests/test_fold_checkpoints.py::test_a_damaged_or_crafted_fold_checkpoint_is_one_line"),
    StateCase("stale-cache-same-mtime", "a cached file edited in place, size and mtime restored",
              "the cache is rebuilt from the new bytes (ctime and content digest differ)",
              "tests/test_cache.py::test_same_size_and_mtime_edit_is_seen"),
    StateCase("file-changed-mid-parse", "a data file truncated and restored while its cache is built",
              "one line: the file changed while it was being read; no cache left",
              "tests/test_integrity.py::test_file_changed_while_its_cache_is_built_fails_clearly"),
    StateCase("crafted-cache-meta", "cache meta.json edited with a consistent story (float32, twice the width)",
              "refused before any array reaches a kernel; rebuilt",
              "tests/test_cache.py::test_crafted_meta_never_reaches_a_kernel"),
    StateCase("corrupt-cache-byte", "one byte of X.bin flipped anywhere",
              "caught as its block is mapped, before its query is yielded; one line, the cache removed",
              "tests/test_integrity.py::test_corrupt_cache_byte_during_a_run_is_one_line_and_the_cache_is_removed"),
    StateCase("crafted-per-query-table", "a batch run's `test_queries.parquet` not Parquet, a FIFO or folder, a column "
              "renamed, qids or folds of the wrong type, a fold the run lacks, or a value edited (its fold mean no "
              "longer matches `rounds.parquet`)", "`compare`: one line naming the file",
              "tests/test_compare.py::test_a_damaged_or_crafted_per_query_table_is_one_line"),
    StateCase("traversal-experiment", "`experiment: ../../x/OWNED` in a received run folder",
              "`plot`/`report`: one line naming the run file; nothing written",
              "tests/test_catalogue.py::test_hostile_run_folder"),
    StateCase("link-in-mlflow-store", "links planted on the path of `RESULTS/.mlflow` (the artifacts folder, a dangling "
              "`mlflow.db`, SQLite's journal, an experiment's artifact folder, `RESULTS` itself), a hard-linked database, "
              "or a database whose experiment keeps artifacts elsewhere",
              "`export mlflow`: one line, exit 1; nothing written outside the results folder",
              "tests/test_export_mlflow.py::test_links_planted_in_the_store_are_refused_and_nothing_is_written_outside"),
    StateCase("parquet-dictionary-bomb", "a 250 KB Parquet table of dictionary- and run-length-encoded columns that "
              "decodes to 470 MB", "refused from its metadata's row counts before any page is read "
              "(`dataset.max_decompression_ratio`); `data inspect` peaks under 600 MB",
              "tests/test_formats.py::test_a_dictionary_bomb_is_refused_from_its_row_counts_in_little_memory"),
    StateCase("concurrent-convert", "two `data convert` to one output at once",
              "each writes a temporary of its own and renames it into place: both finish, the output is one whole table",
              "tests/test_internal_names.py::test_two_converts_to_one_output_never_share_a_temporary"),
    StateCase("long-file-names", "a 251-byte data file name, 253-byte `convert` and `split` outputs",
              "accepted: the cache folder, its lock and every temporary get names that fit 255 bytes (cut, with a hash)",
              "tests/test_internal_names.py::test_a_data_file_with_a_251_byte_name_is_run_cached_and_read_again"),
    StateCase("link-in-output", "a symlink in the plot/report folder pointing outside",
              "refused before anything is written", "tests/test_contained_outputs.py::test_plot_refuses_a_link_in_its_folder_before_writing_anything"),
    StateCase("dead-worker", "a sweep worker killed by SIGKILL", "that run is recorded failed, the others finish, exit 1",
              "tests/test_sweep_robust.py::test_a_killed_local_worker_is_a_failed_run_and_a_rerun_completes_it"),
    StateCase("dead-dask-worker", "a Dask worker dying under its task", "the task is retried, then reported failed",
              "tests/test_sweep_robust.py::test_a_dask_task_whose_worker_dies_is_reported_failed"),
    StateCase("dead-cache-builder", "cache builds killed by SIGKILL (their `.<file>-<key>.tmp-<pid>/` folders left)",
              "removed by the next cache open of any key: its own key's under its lock, others' when their lock is free",
              "tests/test_private_state.py::test_a_cache_build_killed_by_sigkill_leaves_no_temporary"),
    StateCase("lock-of-complete-run", "`ltr run` killed after some runs were written (or a lock file left beside a finished run)",
              "a written run's lock is released at once; `--resume` removes a leftover one; `sweep --status` says done",
              "tests/test_private_state.py::test_locks_of_complete_runs_do_not_outlive_a_killed_run"),
    StateCase("cache-rebuilt-mid-run", "the data file relabelled and its cache rebuilt by another `ltr` command "
              "while a run reads the cache", "the running run keeps reading the version it opened (labels in memory, "
              "X.bin held open); the next run reads the new one",
              "tests/test_integrity.py::test_a_cache_rebuilt_under_a_running_run_does_not_change_what_it_reads"),
    StateCase("lock-race", "20 processes taking a stale run lock at once", "never two holders",
              "tests/test_sweep_robust.py::test_many_concurrent_takers_of_a_stale_lock_never_both_hold_it"),
    StateCase("huge-grid", "a sweep grid of 10^10 points", "refused from the axis lengths (`--max-grid`)",
              "tests/test_sweep_robust.py::test_a_huge_grid_is_refused_from_its_axis_lengths"),
    StateCase("sweep-output", "`output` as a sweep axis", "refused", "tests/test_sweep_robust.py::test_sweeping_output_is_refused"),
    StateCase("bad-scheduler", "a malformed or unreachable `--scheduler`", "one line naming the address",
              "tests/test_sweep_robust.py::test_an_unreachable_scheduler_is_one_line"),
    StateCase("non-utf8-path", "an `--out` path that is not UTF-8", "one line before any work",
              "tests/test_integrity.py::test_a_path_that_is_not_utf8_is_refused_before_any_work"),
    StateCase("read-only-install", "package and HOME not writable (numba's cache)",
              "a private per-user cache directory, else a fresh private temporary one with one note",
              "tests/test_integrity.py::test_numba_cache_falls_back_to_a_user_directory_then_to_a_private_temporary_one"),
    StateCase("planted-numba-index", "numba's cache folder (or HOME) writable by others, with pickled index files planted in it",
              "not used: kernels compile into a private temporary folder, one note; no planted code runs",
              "tests/test_private_state.py::test_a_numba_cache_others_can_write_is_never_loaded"),
    StateCase("link-race-numba-cache", "`~/.cache` a link of the user's to `/tmp/x`, another user's link aimed at a "
              "directory of the user's, repointed at a folder of planted index pickles between the check and the load",
              "`/tmp/x` refused (another user's link, wherever it is met); numba is handed the resolved path, with "
              "no link in it",
              "tests/test_private_state.py::test_another_users_link_behind_a_link_of_ones_own_is_refused_and_cannot_be_swapped"),
    StateCase("relative-cache-variables", "`NUMBA_CACHE_DIR=rel` or `XDG_CACHE_HOME=.cache` (relative) in a folder "
              "holding planted index pickles there", "a relative `NUMBA_CACHE_DIR` is ignored with one note, a relative "
              "`XDG_CACHE_HOME` or `HOME` is ignored; nothing of the working folder is loaded",
              "tests/test_private_state.py::test_relative_cache_variables_never_name_a_folder_of_the_working_directory"),
    StateCase("planted-module-in-cwd", "a `numpy.py` (or an `ltr_cli/` package) in the folder `ltr` is started from",
              "never imported: every Python child the tool starts (`kernels build --ahead`, `bench`, the background "
              "build, the install's build) runs as `python -P`, without the working folder on its path",
              "tests/test_children.py::test_a_module_planted_in_the_working_folder_never_runs_in_a_child"),
    StateCase("damaged-kernel-sidecar", "the kernels-built-ahead sidecar `_ahead.json` nested 200,000 deep, over 1 MiB, "
              "or a FIFO", "not built: every command runs on numba's kernels; never a traceback, never a wait",
              "tests/test_ahead.py::test_a_damaged_sidecar_sends_every_kernel_to_numba"),
    StateCase("click-log-fields", "a click log whose metadata `shown` is a string, float, list or 10^9, another field "
              "of the wrong type, deeply nested metadata, a session spanning two queries, a document shown twice in a "
              "session, sessions out of order (the fingerprint recomputed)",
              "one line naming the log and the field, or the row and its column, before any learner or estimator "
              "reads it", "tests/test_clicklog.py::test_every_logged_field_is_checked_on_read"),
    StateCase("click-log-bomb", "a 2 MB click log of 100 million equal rows (dictionary- and run-length-encoded) "
              "that decodes to gigabytes", "refused from its metadata's row counts before any page is read; "
              "`clicks propensity` peaks under 400 MB",
              "tests/test_clicklog.py::test_a_click_log_that_decodes_to_gigabytes_is_refused_from_its_metadata"),
    StateCase("propensity-file-not-regular", "`clicks.propensity:` a FIFO, `/dev/zero`, a 2 MB or deeply nested file",
              "one line naming the file, at once (never a wait, never a read until memory is gone)",
              "tests/test_click_ranksvm.py::test_a_propensity_file_is_read_only_when_regular_and_small"),
    StateCase("wide-click-log", "a click log showing 1000 documents of 1000-document queries",
              "`randomisation` works on the log's groups, in a few MB (never a pairs x positions table)",
              "tests/test_clicklog.py::test_randomisation_needs_memory_of_the_log_not_of_pairs_times_positions"),
    StateCase("click-log-without-clicks", "a fold's click log (read or generated) with no click",
              "one line naming the log, exit 1, nothing written (once an all-zero model and its test NDCG, exit 0)",
              "tests/test_counterfactual.py::test_a_log_without_a_click_is_refused_not_fitted"),
    StateCase("propensity-overflow", "a propensity file whose first value is 1e-320 (the ratios overflow), or a "
              "propensity of 1e-310 unclipped", "one line naming the file; `models.json` never holds Infinity or NaN",
              "tests/test_counterfactual.py::test_a_propensity_file_whose_weights_overflow_is_refused"),
    StateCase("failure-at-seed-0", "a learner whose weights diverge at every seed, beside a sound one, seeds 0, 1, 2",
              "every seed of the sound learner is written; one line names the failed runs; exit 1 at the end",
              "tests/test_learners.py::test_a_learner_failing_at_seed_0_stops_no_other_seed"),
    StateCase("click-runs-other-protocol", "`compare` of click runs of one experiment under other click models or "
              "round counts; `report` of click runs under other gammas",
              "not paired, the note naming the setting that differs (another gamma: a note); the report gives each "
              "gamma its own `discounted_cumulative@<gamma>` column",
              "tests/test_click_reports.py::test_compare_refuses_click_runs_of_other_horizons_and_notes_another_gamma"),
    StateCase("bench-authors-code", "`bench --startup --authors-code` naming a missing folder or one without "
              "`Perceptron/SLAMOAListNetMSLTR10K.m`, a missing `--authors-data` file, or only one of the two",
              "one line naming the option and the path, exit 1, before anything runs; the checkout is never written",
              "tests/test_bench_authors.py::test_bad_authors_arguments_are_one_line_errors"),
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
    lines += [
        "",
        "## Score files (`ltr eval`)",
        "",
        "Accepted: one score per line, RankLib's `qid<TAB>index<TAB>score` (checked line by line",
        "against the data file's qids and order) and TREC runs `qid Q0 docno rank score tag`",
        "(matched by qid and the data file's `# docid = ...` comments). The data file of these",
        "cases has two queries (qid 10: docids a b c; qid 2: docids a d).",
        "",
        "| case | score file | error names | message contains |",
        "|---|---|---|---|",
    ]
    for sc in SCORE_CASES:
        where = f"file:{sc.line}" if sc.line else "file"
        lines.append(f"| `{sc.id}` | {sc.what} | {where} | {_cell(sc.message)} |")
    lines += ["", "## Configs", "", "| case | input | key path | message contains |", "|---|---|---|---|"]
    for c in CONFIG_CASES:
        where = c.key or (f"file:{c.line}" if c.line else "(file)")
        lines.append(f"| `{c.id}` | {c.what} | {_cell(where)} | {_cell(c.message)} |")
    lines += [
        "",
        "## Run folders read back (`ltr plot`, `ltr report`)",
        "",
        "Each case edits one file of a real run folder; `ltr plot` and `ltr report --out` must",
        "exit 1 with one line naming that file, and write nothing (inside or outside the",
        "output folder).",
        "",
        "| case | edit | file | message contains |",
        "|---|---|---|---|",
    ]
    for r in RESULTS_CASES:
        lines.append(f"| `{r.id}` | {r.what} | {r.file} | {_cell(r.message)} |")
    lines += [
        "",
        "## Hostile or changed state around a run",
        "",
        "Each row names the test that fails if the protection goes away.",
        "",
        "| case | situation | what happens | test |",
        "|---|---|---|---|",
    ]
    for c in STATE_CASES:
        lines.append(f"| `{c.id}` | {c.what} | {c.outcome} | `{c.test.split('::')[1]}` ({c.test.split('::')[0]}) |")
    lines += [
        "",
        "Accepted on purpose (documented behaviour, not errors): a UTF-8 byte-order mark,",
        "CRLF, tabs, blank lines, scientific notation, labels like 0.5 or -1, any bytes inside",
        "a `#` comment, integer qids written with a sign or leading zeros (`qid:01` and `qid:+1`",
        "are qid 1; `ltr data inspect` lists such lines), metric cut-offs",
        "larger than a query (NDCG@k uses min(k, m)), `top-K` feedback with K larger than a",
        "query (all its labels are revealed). In configs, numbers follow YAML 1.2: `1e-3`,",
        "`.5`, `0x1F`, `0o17` are numbers, `1_000`, `1:30`, `0b101` and `yes`/`no`/`on`/`off`",
        "are strings; an integer may be given where a number is expected.",
        "",
    ]
    return "\n".join(_with_contents(lines))


def _with_contents(lines: list[str]) -> list[str]:
    """The page with a table of contents (GitHub's heading anchors) after its introduction."""
    import re

    def anchor(heading: str) -> str:
        return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")

    heads = [line[3:] for line in lines if line.startswith("## ")]
    toc = [f"- [{h}](#{anchor(h)})" for h in heads] + [""]
    first = lines.index(next(line for line in lines if line.startswith("## ")))
    return lines[:first] + toc + lines[first:]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    print(markdown(), end="")
