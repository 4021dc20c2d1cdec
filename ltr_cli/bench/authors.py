"""``ltr bench --startup --authors-code DIR --authors-data FILE``: the perceptron paper's
authors' own 43-query MSLR job under GNU Octave against ltr's, as whole processes.

Their job is ``Perceptron/SLAMOAListNetMSLTR10K.m`` of a checkout of
sougatachaudhuri/Online_Ranking_Project, run unchanged: ``octave --no-gui --quiet --norc``
calls it in a temporary folder where the file names it opens exist. It reads
``E:\\Papers\\Programs\\MSLTR10K\\Fold<k>\\train.txt`` (on Linux, a file of that name in
the current folder): Fold1 is a link to the data file, Fold2 to Fold5 are empty, so it reads
the 43 queries once and its three learners (SLAM with the NDCG weights, Alg. 3, ListNet)
take 42 rounds; it writes its curves and weights under
``E:\\Papers\\Programs\\MSLTR10K\\Experiments\\`` in the same folder. Nothing is written in the
checkout.

ltr's job is the same: ``ltr run configs/mslr_slam.yaml --data FILE`` with those three
learners (``--exclude slam-ap``: the repository has no AP code) and NDCG@10 only (their
code computes no other measure), into a new results folder, so each run parses the text
file as theirs does (and builds its binary cache there). A second ltr figure is the same run
with its data cache warm (a later run on the same file).

Each figure is the best of ``repeats`` processes (CPU: user and system time of the process
and its waited-for children; wall), the three kinds taken in alternation so that all see the
same load. After each Octave run its printed time averages and weights are checked against
ltr's results (to the six decimals it prints): a disagreement stops the bench, since the
jobs would not be the same. The ratio Octave / ltr is the speed-up; the target is 10x, in
CPU seconds, which the load on a shared machine disturbs less than wall time (printed beside).
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ltr_cli.bench.processes import base_env as _base_env
from ltr_cli.bench.processes import best as _best
from ltr_cli.bench.processes import load_average as _load
from ltr_cli.bench.processes import measured_process
from ltr_cli.errors import LtrError
from ltr_cli.core.children import PYTHON

TARGET = 10.0
SCRIPT = Path("Perceptron") / "SLAMOAListNetMSLTR10K.m"
FUNCTION = SCRIPT.stem
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "mslr_slam.yaml"
WINDOWS_ROOT = "E:\\Papers\\Programs\\MSLTR10K\\"  # the path their script opens, a file name here
FOLDS = 5  # their loop reads Fold1..Fold5
#: their output file stem -> ltr's learner of the same job
LEARNERS = {"SLAM": "slam-ndcg", "OA": "alg3", "ListNet": "listnet"}
OCTAVE_FLAGS = ("--no-gui", "--quiet", "--norc")
#: what Octave 7 prints on stderr at every exit, failing or not
OCTAVE_NOISE = ("error: ignoring const execution_exception& while preparing to exit",)
SKIP_OPTIONS = ("give --authors-code DIR (a checkout of sougatachaudhuri/Online_Ranking_Project) and "
                "--authors-data FILE (the first 5,000 lines of MSLR-WEB10K Fold1 train.txt) to time it "
                "(docs/fidelity.md)")


def check_inputs(code: Path | None, data: Path | None) -> tuple[Path, Path] | None:
    """The checkout and the data file, or None when neither is given; a one-line error
    when only one is given or either is not what it must be."""
    if code is None and data is None:
        return None
    if code is None or data is None:
        given, missing = ("--authors-code", "--authors-data") if data is None else ("--authors-data", "--authors-code")
        raise LtrError(f"{given} needs {missing} too: the authors' job reads the data file from their checkout's "
                       "script; give both")
    if not code.is_dir():
        raise LtrError(f"--authors-code {code}: no such folder; give a checkout of "
                       "sougatachaudhuri/Online_Ranking_Project")
    if not (code / SCRIPT).is_file():
        raise LtrError(f"--authors-code {code}: not a checkout of sougatachaudhuri/Online_Ranking_Project "
                       f"(no {SCRIPT.as_posix()}); give the folder that holds Perceptron/")
    if not data.is_file():
        raise LtrError(f"--authors-data {data}: no such file; give the 43-query MSLR-WEB10K sample (the first "
                       "5,000 lines of Fold1 train.txt)")
    return code.resolve(), data.resolve()


def octave() -> str | None:
    """The Octave executable, or None when it is not installed."""
    return shutil.which("octave") or shutil.which("octave-cli")


def skipped(inputs: tuple[Path, Path] | None) -> str | None:
    """Why the comparison cannot run here (None: it can)."""
    if inputs is None:
        return SKIP_OPTIONS
    if octave() is None:
        return "octave is not installed (Debian: apt-get install octave)"
    return None


def octave_argv(code: Path) -> list[str]:
    """Octave running their script from ``code`` in the current folder."""
    folder = str(code / SCRIPT.parent).replace("'", "''")
    exe = octave()
    assert exe is not None
    # an error's message as the last line on stderr (Octave's own ends with the call stack)
    return [exe, *OCTAVE_FLAGS, "--eval",
            f"try, addpath('{folder}'); {FUNCTION}(); catch e, fprintf(2, 'error: %s\\n', e.message); exit(1); end"]


def octave_folder(root: Path, data: Path) -> Path:
    """A folder where their script finds its input: Fold1 the data file, Fold2..5 empty."""
    root.mkdir(parents=True)
    (root / f"{WINDOWS_ROOT}Fold1\\train.txt").symlink_to(data)
    for k in range(2, FOLDS + 1):
        (root / f"{WINDOWS_ROOT}Fold{k}\\train.txt").write_bytes(b"")
    return root


def ltr_argv(data: Path, out: Path, cache: Path | None = None) -> list[str]:
    """ltr's same job: the config's three learners of their code, NDCG@10 only."""
    argv = [*PYTHON, "-m", "ltr_cli", "run", str(CONFIG), "-q", "--data", str(data), "--out", str(out),
            "--exclude", "slam-ap", "--set", "metrics.names=[ndcg@10]"]
    return argv + (["--set", f"cache.dir={cache}"] if cache is not None else [])


def _theirs(folder: Path, stem: str, what: str) -> list[float]:
    path = folder / f"{WINDOWS_ROOT}Experiments\\{stem}{what}.txt"
    try:
        return [float(v) for v in path.read_text().split()]
    except OSError as exc:
        raise LtrError(f"bench --startup: the authors' job did not write {path.name} ({exc.strerror}); is "
                       f"{SCRIPT.as_posix()} their script as published?") from None
    except ValueError as exc:
        raise LtrError(f"bench --startup: the authors' job wrote {path.name} with a value that is not a number "
                       f"({exc})") from None


def _ours(results: Path, learner: str) -> tuple[list[float], list[float]]:
    """(NDCG@10 time average per round, final weights) of ltr's run of ``learner``."""
    import pyarrow.parquet as pq

    found = sorted(results.glob(f"mslr_slam/{learner}-*"))
    if len(found) != 1:
        raise LtrError(f"bench --startup: ltr's job left {len(found)} run folders of {learner} in {results}")
    ndcg = pq.read_table(found[0] / "rounds.parquet", columns=["ndcg@10"]).column(0).to_pylist()
    average, total = [], 0.0
    for t, v in enumerate(ndcg, 1):
        total += v
        average.append(total / t)
    weights = json.loads((found[0] / "models.json").read_text())["final"]["w"]
    return average, [math.nan if w is None else float(w) for w in weights]


def _printed_equal(ours: float, theirs: float) -> bool:
    """``theirs`` is ``ours`` as Octave's ``%f`` prints it (six decimals; a last-digit
    rounding of the same number either way is allowed)."""
    if math.isnan(theirs) or math.isnan(ours):
        return math.isnan(theirs) and math.isnan(ours)
    return abs(ours - theirs) <= 5e-7 * (1 + 1e-9) + 1e-15 * abs(ours)


def compare(folder: Path, results: Path) -> str | None:
    """Where the authors' printed results (in ``folder``) and ltr's (under ``results``)
    differ, or None when every time average and weight agrees."""
    for stem, learner in LEARNERS.items():
        average, weights = _ours(results, learner)
        their_average, their_weights = _theirs(folder, stem, "NDCG10"), _theirs(folder, stem, "Ranker")
        rounds = len(average)
        if any(v != 0.0 for v in their_average[rounds:]) or len(their_average) < rounds:
            return f"{learner}: their job took another number of rounds than ltr's {rounds}"
        for t, (a, b) in enumerate(zip(average, their_average), 1):
            if not _printed_equal(a, b):
                return f"{learner}: time-averaged NDCG@10 at round {t}: ltr {a:.9f}, theirs {b:f}"
        if len(weights) != len(their_weights):
            return f"{learner}: {len(weights)} weights in ltr's model, {len(their_weights)} in theirs"
        for i, (a, b) in enumerate(zip(weights, their_weights), 1):
            if not _printed_equal(a, b):
                return f"{learner}: final weight {i}: ltr {a!r}, theirs {b:f}"
    return None


def authors_figures(inputs: tuple[Path, Path] | None, quick: bool = False) -> dict[str, Any]:
    """The comparison's figures (best of 3; one each with ``quick``), or ``{"skipped": why}``."""
    why = skipped(inputs)
    if why is not None or inputs is None:
        return {"skipped": why}
    return run_authors_bench(*inputs, repeats=1 if quick else 3)


def run_authors_bench(code: Path, data: Path, repeats: int = 3) -> dict[str, Any]:
    """Their job and ltr's (from the text, and with the data cache warm), ``repeats`` of
    each in alternation: the best CPU and wall seconds of each and the ratios."""

    if not CONFIG.is_file():
        raise LtrError(f"bench --startup: the config {CONFIG} is not there; run the bench from a checkout of the "
                       "repository")
    env = _base_env()
    load = _load()
    theirs, ours, warm = [], [], []
    with tempfile.TemporaryDirectory(prefix="ltr-bench-authors-") as tmp:
        root = Path(tmp)
        cache = root / "data-cache"
        measured_process(ltr_argv(data, root / "prepare", cache), env, "bench --startup: ltr's 43-query job")
        for i in range(repeats):
            folder = octave_folder(root / f"octave{i}", data)
            theirs.append(measured_process(octave_argv(code), env, "bench --startup: the authors' job under Octave",
                                           cwd=folder, noise=OCTAVE_NOISE))
            ours.append(measured_process(ltr_argv(data, root / f"ltr{i}"), env, "bench --startup: ltr's 43-query job"))
            warm.append(measured_process(ltr_argv(data, root / f"warm{i}", cache), env,
                                         "bench --startup: ltr's 43-query job"))
            differs = compare(folder, root / f"ltr{i}")
            if differs:
                raise LtrError(f"bench --startup: the authors' job and ltr's disagree ({differs}): they are not the "
                               "same job; check --authors-data")
    (their_s, their_cpu), (our_s, our_cpu), (warm_s, warm_cpu) = _best(theirs), _best(ours), _best(warm)
    return {"repeats": repeats, "octave": _octave_version(), "load_average": load, "load_average_after": _load(),
            "theirs_s": round(their_s, 3), "theirs_cpu_s": round(their_cpu, 3),
            "ltr_s": round(our_s, 3), "ltr_cpu_s": round(our_cpu, 3),
            "ltr_warm_s": round(warm_s, 3), "ltr_warm_cpu_s": round(warm_cpu, 3),
            "ratio": round(their_s / our_s, 2), "cpu_ratio": round(their_cpu / our_cpu, 2),
            "warm_ratio": round(their_s / warm_s, 2), "warm_cpu_ratio": round(their_cpu / warm_cpu, 2),
            "target": TARGET, "same_results": True}


def _octave_version() -> str:
    import subprocess

    exe = octave()
    assert exe is not None
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    first = done.stdout.splitlines()[0] if done.stdout else ""
    return first.removeprefix("GNU Octave, version ").strip() or "unknown"


def format_authors_lines(r: dict[str, Any]) -> list[str]:
    """The comparison's lines in the start-up table."""
    if "skipped" in r:
        return [f"  the authors' 43-query job under Octave: skipped: {r['skipped']}"]
    ok = {True: "meets", False: "MISSES"}
    return [
        f"the authors' 43-query MSLR job (Perceptron/SLAMOAListNetMSLTR10K.m) under GNU Octave {r['octave']} vs "
        f"ltr's (best of {r['repeats']}, in alternation; load average {r['load_average']} before, "
        f"{r['load_average_after']} after; the same time averages and weights to the printed 6 decimals):",
        f"  Octave                              CPU {r['theirs_cpu_s']:7.3f} s   wall {r['theirs_s']:7.3f} s",
        f"  ltr run, from the text file         CPU {r['ltr_cpu_s']:7.3f} s   wall {r['ltr_s']:7.3f} s",
        f"  ltr run, its data cache warm        CPU {r['ltr_warm_cpu_s']:7.3f} s   wall {r['ltr_warm_s']:7.3f} s",
        f"  Octave / ltr from the text          CPU {r['cpu_ratio']:6.2f}x   wall {r['ratio']:6.2f}x   "
        f"({ok[r['cpu_ratio'] >= r['target']]} the target {r['target']:g}x in CPU)",
        f"  Octave / ltr, data cache warm       CPU {r['warm_cpu_ratio']:6.2f}x   wall {r['warm_ratio']:6.2f}x",
    ]
