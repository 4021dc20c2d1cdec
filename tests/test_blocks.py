"""The compiled block loop (issue 19): runs that go through it write exactly what the
round-by-round path writes (rounds.parquet and the model, byte for byte), for every learner
it covers and every convention, and a run killed inside a block resumes byte-identically."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conformance import examples, source, write_data

runner = CliRunner()


def _data(path: Path, queries: int = 60, features: int = 12, seed: int = 0) -> Path:
    return write_data(path, queries, features, seed)


# every built-in online learner that learns from labels with each of its declared examples
# (the registry's ``examples``, as the conformance suite runs them), as YAML flow mappings
LEARNERS = {name: json.dumps(spec) for name, spec in examples(feedback="labels").items() if source(name) == "built-in"}


def _config(tmp_path: Path, files: list[Path], ties: str, no_relevant: str, protocol: str) -> Path:
    cfg = tmp_path / f"c-{ties}-{no_relevant}.yaml"
    learners = "\n".join(f"  {name}: {spec}" for name, spec in LEARNERS.items())
    cfg.write_text(f"""experiment: blocks
seed: 3
fidelity: authors-code
dataset: {{kind: files, features: 12, files: [{', '.join(map(str, files))}]}}
protocol: {protocol}
metrics: {{names: [ndcg@10, ap, p@5, ndcg], ties: {ties}, no_relevant: {no_relevant}}}
learners:
{learners}
""")
    return cfg


def _run(cfg: Path, out: Path, blocks: bool, monkeypatch) -> dict[str, Path]:
    from ltr_cli.runs import online as runner_module

    monkeypatch.setattr(runner_module, "BLOCKS", blocks)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.stderr
    return {Path(line).name.rsplit("-", 1)[0]: Path(line) for line in res.stdout.split()}


def _count_block_runs(monkeypatch) -> list[int]:
    """A list that grows by the size of each group of learners that runs through the
    compiled block loop (one entry per group)."""
    from ltr_cli.protocols import online_blocks

    calls: list[int] = []
    real = online_blocks.BlockRunner.run
    monkeypatch.setattr(online_blocks.BlockRunner, "run",
                        lambda self, *a, **k: (calls.append(len(self.learners)), real(self, *a, **k))[1])
    return calls


@pytest.mark.parametrize("ties,no_relevant,protocol", [
    ("reverse-input", "one", "{passes: 2, checkpoint_every: 37}"),
    ("input-order", "zero", "{passes: 3, shuffle: true, keep_probability: 0.6, drop_last_query: true, "
                            "checkpoint_every: 0}"),
    ("input-order", "skip", "{passes: 2, max_rounds: 150, checkpoint_every: 50}"),
])
def test_blocks_write_what_the_round_by_round_path_writes(tmp_path, monkeypatch, ties, no_relevant, protocol):
    files = [_data(tmp_path / "a.txt", seed=1), _data(tmp_path / "b.txt", queries=31, seed=2)]
    cfg = _config(tmp_path, files, ties, no_relevant, protocol)
    reference = _run(cfg, tmp_path / "reference", False, monkeypatch)
    calls = _count_block_runs(monkeypatch)
    blocked = _run(cfg, tmp_path / "blocked", True, monkeypatch)
    assert sum(calls) == len(LEARNERS)  # every learner here ran in compiled blocks,
    assert len(calls) == 4  # in one group per family (each query read once for its learners)
    assert sorted(reference) == sorted(blocked) == sorted(LEARNERS)
    for name in LEARNERS:
        for file in ("rounds.parquet", "models.json"):
            assert (reference[name] / file).read_bytes() == (blocked[name] / file).read_bytes(), (name, file)
    assert examples()["listnet1"]["numerics"] == "authors-code"
    summary = json.loads((blocked["listnet1"] / "summary.json").read_text())
    assert summary["nonfinite_round"] is not None  # the authors' NaN weights, reported by the block path too


def test_learners_outside_the_block_loop_still_run_round_by_round(tmp_path, monkeypatch):
    from ltr_cli.protocols import online_blocks

    files = [_data(tmp_path / "a.txt")]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: rest
dataset: {{kind: files, features: 12, files: [{files[0]}]}}
metrics: {{names: [ndcg@10], ties: random}}
learners: {{slam: {{type: slam-perceptron}}, rtopkf: {{type: rtopkf, surrogate: squared}},
           ogd: {{type: ogd, surrogate: ranksvm}}}}
""")
    calls: list[int] = []
    monkeypatch.setattr(online_blocks.BlockRunner, "run", lambda *a, **k: calls.append(1))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0 and not calls


def test_the_plan_is_the_stream(tmp_path):
    """plan_rounds draws what stream_rounds draws, in the same order."""
    from types import SimpleNamespace

    from ltr_cli.data.sources import StreamStats, open_source, plan_rounds, stream_rounds

    files = [_data(tmp_path / "a.txt", seed=4), _data(tmp_path / "b.txt", queries=17, seed=5)]
    spec = SimpleNamespace(kind="files", files=files, features=12, index_base=1, qid="auto", group_files=None,
                           null_value=None, split_qids="error", storage="float64", normalize="none", name=None,
                           limits=lambda: {})
    for passes, shuffle, keep, drop in [(1, False, 1.0, False), (3, True, 0.5, True), (2, False, 0.8, False)]:
        source = open_source(spec, 0, tmp_path / "cache")
        a_stats, b_stats = StreamStats(), StreamStats()
        streamed = [(p, q.qid, q.m) for p, q in stream_rounds(source, passes, shuffle, keep,
                                                               np.random.default_rng(9), drop, a_stats)]
        found = plan_rounds(source, passes, shuffle, keep, np.random.default_rng(9), drop, b_stats)
        assert found is not None
        segments, units = found
        planned = [(seg.pass_no, units[seg.unit].qids[q], int(units[seg.unit].ends[q] - units[seg.unit].starts[q]))
                   for seg in segments for q in seg.order]
        assert planned == streamed and a_stats.dropped_last == b_stats.dropped_last


_KILL_IN_BLOCK = """
import os, sys
from ltr_cli.cli import app as cli
from ltr_cli.protocols import online_blocks
real = online_blocks.BlockRunner._after
def after(self, i, out, W, t, *args):
    if t >= 150:  # the block after the checkpoint at round 148 was computed, not recorded
        os._exit(9)
    real(self, i, out, W, t, *args)
online_blocks.BlockRunner._after = after
sys.argv = ["ltr", sys.argv[1], sys.argv[2], "--out", sys.argv[3], "-q"]  # ltr run|sweep CONFIG
cli.main()
"""


@pytest.mark.parametrize("learner", ["{type: slam-perceptron, weights: level-averaged}",
                                     "{type: rtopkf, surrogate: ranksvm, schedule: authors-code, gamma_scale: 3.0}",
                                     "{type: random}"])
def test_a_run_killed_inside_a_block_resumes_byte_identically(tmp_path, learner):
    """The learner's state at the checkpoint (weights, round, RTop-kF's own generator after
    the block's exploration draws) continues exactly."""
    data = _data(tmp_path / "a.txt", queries=80)
    cfg = tmp_path / "k.yaml"
    cfg.write_text(f"""experiment: kill
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol: {{passes: 4, shuffle: true, checkpoint_every: 74}}
metrics: {{names: [ndcg@10, ap], ties: reverse-input}}
learners: {{slam: {learner}}}
""")
    reference = tmp_path / "reference"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(reference), "-q"]).exit_code == 0
    killed = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", _KILL_IN_BLOCK, "run", str(cfg), str(killed)], capture_output=True,
                          text=True)
    assert proc.returncode == 9, proc.stderr
    (ckpt,) = (killed / "kill").glob(".*.checkpoint")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert "resuming after round 148" in res.stderr
    (a,) = (reference / "kill").glob("slam-*/rounds.parquet")
    (b,) = (killed / "kill").glob("slam-*/rounds.parquet")
    assert a.read_bytes() == b.read_bytes() and not ckpt.exists()


@pytest.mark.parametrize("dataset", [
    "{kind: separable, variant: paper, queries: 80}",
    "{kind: shaped, like: mslr-web10k, queries: 40, docs_per_query: 15}",
    "FILES-QUERY-LEVEL",
])
def test_generated_and_normalised_data_run_in_blocks_unchanged(tmp_path, monkeypatch, dataset):
    """A generated stream is produced once as arrays (shared by the run's learners) and a
    query-level normalised file is normalised once; both give the per-round path's bytes."""

    if dataset == "FILES-QUERY-LEVEL":
        data = _data(tmp_path / "a.txt", seed=7)
        dataset = f"{{kind: files, features: 12, files: [{data}], normalize: query-level}}"
    cfg = tmp_path / "g.yaml"
    cfg.write_text(f"""experiment: gen
dataset: {dataset}
protocol: {{passes: 2, shuffle: true, checkpoint_every: 100}}
metrics: {{names: [ndcg@10, ap], ties: reverse-input, no_relevant: one}}
learners:
  slam: {LEARNERS["slam-perceptron0"]}
  alg3: {LEARNERS["alg30"]}
  listnet: {LEARNERS["listnet0"]}
""")
    reference = _run(cfg, tmp_path / "reference", False, monkeypatch)
    calls = _count_block_runs(monkeypatch)
    blocked = _run(cfg, tmp_path / "blocked", True, monkeypatch)
    assert calls == [2, 1]  # SLAM and Alg. 3 in one group, ListNet in another
    for name in ("slam", "alg3", "listnet"):
        for file in ("rounds.parquet", "models.json"):
            assert (reference[name] / file).read_bytes() == (blocked[name] / file).read_bytes(), (name, file)


def test_units_past_the_memory_budget_stream_query_by_query(tmp_path, monkeypatch):
    from ltr_cli.data import sources
    from ltr_cli.data.sources import arrays, generated

    from collections import OrderedDict

    monkeypatch.setattr(arrays, "ARRAY_BUDGET", 1000)
    monkeypatch.setattr(generated, "_GENERATED", OrderedDict())
    from types import SimpleNamespace

    spec = SimpleNamespace(kind="separable", variant="authors", queries=50, docs=20, features=None, margin=1.0,
                           seed=None)
    source = sources.open_source(spec, 0)
    assert source.unit_arrays(0) is None
    assert sources.plan_rounds(source, 1, False, 1.0, np.random.default_rng(0)) is None


def test_bench_online_reports_its_ratios_on_a_given_file(tmp_path, monkeypatch):
    """Structure only (timings are never asserted): every figure of ltr bench --online is
    there, at smoke size, on the user's own file (read by the project's reader, its queries
    counted from it). The timed ``ltr`` commands run in this process (``ltr bench`` itself
    times whole processes; ``_process`` is checked on its own below), the reference path's
    ``LTR_KERNELS=0`` as the kernels' switch."""
    from ltr_cli import kernels
    from ltr_cli.bench import command, online
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight
    from ltr_cli.errors import LtrError

    real_rounds, ran = command.bench_rounds, []

    runs_paths: list[tuple[str, bool]] = []

    def in_process(args: list[str], env: dict[str, str] | None = None) -> float:
        ran.append((args[0], bool(env)))
        if args[0] == "run" and ("alg3-" in args[1]):
            runs_paths.append((args[args.index("--kernels") + 1] if "--kernels" in args else "auto", bool(env)))
        assert set(env or {}) <= {"LTR_KERNELS"}
        start = time.perf_counter()
        with pytest.MonkeyPatch.context() as mp:
            if env:
                mp.setattr(kernels, "ENABLED", env["LTR_KERNELS"] != "0")
            res = runner.invoke(app, args)
        if res.exit_code != 0:
            raise LtrError(f"bench --online: 'ltr {' '.join(args[:2])}' failed: {res.stderr}")
        return time.perf_counter() - start

    monkeypatch.setattr(online, "_process", in_process)
    monkeypatch.setattr(online, "_cpu_process", in_process)
    monkeypatch.setattr(command, "bench_rounds", lambda queries, rounds: real_rounds(queries, 20, repeats=1))
    data = tmp_path / "mine.txt"
    write_svmlight(data, shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(12, seed=9)), qid_style="token")
    out = online.run_online_bench(long_rounds=24, learners=["alg3"], repeats=1, data=data, learner_rounds=24)
    assert out["queries"] == 12 and out["source"] == str(data) and out["learners"]["alg3"]["rounds"] == 24
    row = out["learners"]["alg3"]
    assert {"us_per_round", "ratio_to_floor", "reference_us_per_round", "kernel_level_us"} <= set(row)
    assert row["kernel_level_us"] > 0  # ltr bench's own kernel-level figure, beside it
    assert out["floor_us_per_round"] > 0 and out["sweep"]["points"] == 16
    assert out["four_learners"]["four_s"] > 0 and out["checkpoints"]["default_every"] == 10_000
    assert ("run", True) in ran and ("sweep", False) in ran and ran[0] == ("data", False)
    # every timed learner run has its path forced: the planner would put a one-pass run on the
    # reference path, and the long run's kernel loading would count as rounds
    assert runs_paths and all(path == ("reference" if env else "compiled") for path, env in runs_paths)
    table = online.format_online_table(out)
    assert "x floor" in table and "16-rate sweep" in table and "mslr_slam.yaml" in table and str(data) in table
    assert "CPU us/round" in table and "us of CPU per round" in table  # the learners and the floor in CPU time
    # without --data, MSLR-shaped queries are generated and written for the timed runs
    path, qs, source = online._queries(None, tmp_path, 20)
    assert len(qs) == 20 and source == "MSLR-shaped" and path.read_text().count("qid:") == sum(q.m for q in qs)


def test_bench_online_refuses_data_without_online_and_a_file_without_qid_tokens(tmp_path):
    """--data without --online is refused; so is a file whose qids are in comments (the
    timed runs read a registry dataset, qid: tokens), in one line."""
    data = tmp_path / "mine.txt"
    data.write_text("3 qid:1 1:0.1 2:0.7\n0 qid:1 1:0.2\n")
    res = runner.invoke(app, ["bench", "--data", str(data)])
    assert res.exit_code == 1 and res.stderr.strip() == "ltr: error: --data measures online runs on a file: add --online"
    commented = tmp_path / "commented.txt"
    commented.write_text("3 1:0.1 2:0.7 # 1\n0 1:0.2 # 1\n")
    res = runner.invoke(app, ["bench", "--online", "--data", str(commented)])
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1 and "qid" in res.stderr


def test_bench_online_reports_a_failing_run_in_one_line(tmp_path):
    """A timed ltr process that fails (a learner diverging on the user's file, say) stops the
    bench with that process's own error, not a traceback of the subprocess call."""
    from ltr_cli.bench.online import _cpu_process, _process
    from ltr_cli.errors import LtrError

    for timed in (_process, _cpu_process):  # wall time; CPU time (the learners' figures)
        with pytest.raises(LtrError, match=r"^bench --online: 'ltr run .*missing.yaml' failed: .*missing.yaml") as caught:
            timed(["run", str(tmp_path / "missing.yaml")], {"LTR_KERNELS": "0"})
        assert "\n" not in str(caught.value)
        assert timed(["--help"], {"LTR_KERNELS": "0"}) > 0  # a whole process that succeeds, timed


def test_a_generated_stream_is_produced_once_per_process(monkeypatch):
    """Every source with the same generator parameters (the learners of a run, the points of
    a sweep in one worker) maps the same read-only arrays; the stream is generated once."""
    from collections import OrderedDict
    from types import SimpleNamespace

    from ltr_cli.data import sources
    from ltr_cli.data.sources import generated

    monkeypatch.setattr(generated, "_GENERATED", OrderedDict())
    made: list[int] = []
    real = generated.separable_queries

    def counted(spec):
        made.append(1)
        return real(spec)

    monkeypatch.setattr(generated, "separable_queries", counted)
    spec = SimpleNamespace(kind="separable", variant="paper", queries=30, docs=20, features=None, margin=1.0,
                           seed=None)
    a = sources.open_source(spec, 4).unit_arrays(0)
    b = sources.open_source(spec, 4).unit_arrays(0)
    c = sources.open_source(spec, 5).unit_arrays(0)  # another seed: another stream
    assert a is b and c is not a and len(made) == 2
    assert a is not None and not a.X.flags.writeable
    streamed = list(sources.open_source(spec, 4).queries(0))
    assert all(np.array_equal(q.X, a.X[a.starts[i]:a.ends[i]]) for i, q in enumerate(streamed))


def test_a_large_generated_stream_is_kept_only_when_read_again(monkeypatch):
    from collections import OrderedDict
    from types import SimpleNamespace

    from ltr_cli.data import sources
    from ltr_cli.data.sources import generated

    monkeypatch.setattr(generated, "_GENERATED", OrderedDict())
    monkeypatch.setattr(generated, "SMALL_STREAM", 1000)  # bytes: every stream here is "large"
    monkeypatch.setattr(generated, "KEEP_GENERATED", False)  # (an in-process sweep before may have set it)
    spec = SimpleNamespace(kind="separable", variant="paper", queries=30, docs=20, features=None, margin=1.0,
                           seed=None)
    once = sources.open_source(spec, 1)
    assert once.unit_arrays(0) is None  # one pass of one learner: streamed
    twice = sources.open_source(spec, 1)
    twice.reads = 2
    assert twice.unit_arrays(0) is not None
    monkeypatch.setattr(generated, "_GENERATED", OrderedDict())
    monkeypatch.setattr(generated, "KEEP_GENERATED", True)  # a sweep worker: later points read it again
    assert sources.open_source(spec, 1).unit_arrays(0) is not None


def test_compile_ahead_runs_jobs_in_children_and_survives_their_failures(tmp_path):
    import os

    from ltr_cli.protocols.warmup import CompileAhead

    marker = tmp_path / "compiled"

    def ok() -> None:
        marker.write_text(str(os.getpid()))

    def bad() -> None:
        raise RuntimeError("a compile that fails is done again by the parent when it needs it")

    ahead = CompileAhead([bad, ok])
    ahead.wait()
    if (os.cpu_count() or 1) >= 2:
        assert marker.read_text() != str(os.getpid())  # in a child
    else:
        assert not marker.exists()  # one CPU: nothing is started


@pytest.mark.parametrize("cached", [False, True])
def test_a_second_block_family_compiles_alongside_the_first(tmp_path, monkeypatch, cached):
    """SLAM and Alg. 3 (one family) run first; ListNet's family is handed to a child, unless
    the kernel cache holds its kernel already (then nothing is compiled, and no child runs)."""
    from ltr_cli.runs import kernel_plan, online as online_runs

    handed: list[int] = []
    real = online_runs.CompileAhead
    monkeypatch.setattr(online_runs, "CompileAhead", lambda jobs: (handed.append(len(jobs)), real(jobs))[1])
    monkeypatch.setattr(kernel_plan, "uncached_families", lambda families: [] if cached else families)
    monkeypatch.setattr(kernel_plan, "ahead_families", lambda families: [])  # numba's kernels
    cfg = tmp_path / "two.yaml"
    cfg.write_text(f"""experiment: two
dataset: {{kind: files, features: 12, files: [{_data(tmp_path / "a.txt")}]}}
metrics: {{names: [ndcg@10], ties: reverse-input}}
learners: {{slam: {LEARNERS["slam-perceptron0"]}, alg3: {LEARNERS["alg30"]}, listnet: {LEARNERS["listnet0"]}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0 and handed == [0 if cached else 1], (res.output, handed)


_KILLED_WHILE_COMPILING = """
import os, signal, sys, time
from pathlib import Path
from ltr_cli.runs.locks import RunLock
from ltr_cli.protocols.warmup import CompileAhead
RunLock(Path(sys.argv[1])).acquire()
ahead = CompileAhead([lambda: time.sleep(60)])  # a compile that takes long
print(ahead._children[0].pid if ahead._children else 0, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_run_killed_while_a_child_compiles_releases_its_locks(tmp_path):
    """The child neither keeps the parent's run locks (through inherited files) nor outlives it."""
    import os
    import time

    from ltr_cli.runs.locks import RunLock

    lock = tmp_path / ".run.lock"
    proc = subprocess.run([sys.executable, "-c", _KILLED_WHILE_COMPILING, str(lock)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert not RunLock(lock).is_held_elsewhere()
    child = int(proc.stdout.strip() or 0)
    if child:  # gone soon after its parent (Linux): no compiling orphan
        deadline = time.time() + 10
        while time.time() < deadline and os.path.exists(f"/proc/{child}"):
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{child}")


def test_a_failing_learner_does_not_stop_the_others_of_a_run(tmp_path):
    """Grouped or not, every other learner of the config is written; the error names the learner."""
    import os

    data = _data(tmp_path / "a.txt")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: fails
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol: {{passes: 4, shuffle: true, checkpoint_every: 40}}
metrics: {{names: [ndcg@10], ties: reverse-input}}
learners:
  ogd-a: {{type: ogd, surrogate: squared, step: {{rule: constant, eta: 0.001}}}}
  slam: {{type: slam-perceptron, measure: ndcg}}
  ogd-fail: {{type: ogd, surrogate: squared, step: {{rule: constant, eta: 1e6}}}}
  ogd-c: {{type: ogd, surrogate: squared, step: {{rule: constant, eta: 0.01}}}}
""")
    for blocks in ("1", "0"):
        out = tmp_path / f"out{blocks}"
        proc = subprocess.run([sys.executable, "-m", "ltr_cli", "run", str(cfg), "--out", str(out), "-q"],
                              capture_output=True, text=True, env={**os.environ, "LTR_BLOCKS": blocks})
        assert proc.returncode == 1
        assert proc.stderr.startswith("ltr: error: ogd-fail (seed 0): round ") and proc.stderr.count("\n") == 1
        written = sorted(p.name.rsplit("-", 1)[0] for p in (out / "fails").iterdir() if not p.name.startswith("."))
        assert written == ["ogd-a", "ogd-c", "slam"], written
        assert not list((out / "fails").glob(".*.checkpoint*"))  # the finished runs leave none
