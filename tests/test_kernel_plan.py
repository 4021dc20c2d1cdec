"""The first run: `ltr run` plans its path before compiling anything (reference for a run too
small to repay the compile, compiled for a large one), both paths write the same bytes, the
compile notice comes only with a real compile, and `ltr bench --startup` prints its ratios."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.runs import kernel_plan
from ltr_cli.runs.plan import plan_experiment

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "configs" / "simulated_separable.yaml"
runner = CliRunner()


def _demo_runs():
    (runs,) = plan_experiment(load_config(DEMO, []))
    return runs


def _source(queries: int) -> SimpleNamespace:
    """A separable stream's sizes as the planner reads them (d = 10, 20 documents)."""
    return SimpleNamespace(n_queries=queries, n_features=10, name="separable-authors",
                           params={"kind": "separable", "docs": 20})


@pytest.mark.parametrize("cached", [True, False])
def test_the_demo_is_planned_onto_the_reference_path(monkeypatch, cached):
    """1,000 rounds x 3 learners: less than loading cached kernels, let alone compiling."""
    monkeypatch.setattr(kernel_plan, "uncached_families", lambda families: [] if cached else families)
    monkeypatch.setattr(kernel_plan, "ahead_families", lambda families: [])  # numba's kernels
    runs = _demo_runs()
    plan = kernel_plan.plan_kernels(runs, _source(1000))
    assert plan.path == "reference" and not plan.compiled
    assert plan.families == ["ogd", "perceptron"] and plan.learner_rounds == 3000
    assert plan.reference_seconds < plan.compiled_seconds
    assert ("loading the cached kernels" if cached else "which would first compile ogd, perceptron") in plan.why
    assert "compiling" not in plan.why  # the reference path compiles nothing


def test_a_large_run_is_planned_onto_the_compiled_path(monkeypatch):
    monkeypatch.setattr(kernel_plan, "uncached_families", lambda families: families)  # even with everything to compile
    monkeypatch.setattr(kernel_plan, "ahead_families", lambda families: [])  # numba's kernels
    plan = kernel_plan.plan_kernels(_demo_runs(), _source(2_000_000))
    assert plan.path == "compiled" and plan.uncached == ["ogd", "perceptron"]
    assert plan.compiled_seconds < plan.reference_seconds
    record = plan.record()
    assert record["path"] == "compiled" and record["learner_rounds"] == 6_000_000


def test_the_user_forces_the_path():
    runs = _demo_runs()
    assert kernel_plan.plan_kernels(runs, _source(2_000_000), "reference").path == "reference"
    forced = kernel_plan.plan_kernels(runs, _source(10), "compiled")
    assert forced.path == "compiled" and "asked for" in forced.why


def test_runs_outside_the_block_loop_are_planned_on_their_per_round_kernels(monkeypatch):
    """A learner that runs round by round (no block family: it logs its regret, say) still
    has compiled steps: small runs take the reference path, large ones the compiled one; a
    learner without any kernel always takes the reference path."""
    monkeypatch.setattr(kernel_plan, "uncached_families", lambda families: families)
    monkeypatch.setattr(kernel_plan, "ahead_families", lambda families: [])  # numba's kernels
    plain = [type(r)(r.spec, r.learner, r.run_id, r.stream, None) for r in _demo_runs()]  # no block family
    small, large = (kernel_plan.plan_kernels(plain, _source(n)) for n in (1000, 2_000_000))
    assert small.families == large.families == ["rounds"]
    assert small.path == "reference" and large.path == "compiled"
    monkeypatch.setattr(kernel_plan, "_round_kernels", lambda run: False)
    none = kernel_plan.plan_kernels(plain, _source(2_000_000))
    assert none.path == "reference" and "no learner" in none.why


def _read(folder: Path) -> dict[str, tuple[bytes, bytes, dict]]:
    out = {}
    for run in sorted(folder.glob("*/")):
        summary = json.loads((run / "summary.json").read_text())
        kept = {k: summary[k] for k in ("rounds", "mistakes", "updates", "metrics", "theory")}
        out[run.name] = ((run / "rounds.parquet").read_bytes(), (run / "models.json").read_bytes(), kept)
    return out


def test_both_paths_write_the_same_bytes_for_the_demo(tmp_path):
    """The demo on the reference path and on the compiled path: rounds.parquet and models.json
    byte for byte, the summary's numbers equal; each manifest says which path and why."""
    folders = {}
    for path in ("reference", "compiled"):
        res = runner.invoke(app, ["run", str(DEMO), "--out", str(tmp_path / path), "-q", "--kernels", path])
        assert res.exit_code == 0, res.output
        folders[path] = tmp_path / path / "simulated_separable"
    ref, fast = _read(folders["reference"]), _read(folders["compiled"])
    assert len(ref) == 3 and ref.keys() == fast.keys()
    for name in ref:
        assert ref[name] == fast[name], name
    for path, folder in folders.items():
        for manifest in folder.glob("*/manifest.json"):
            kernels = json.loads(manifest.read_text())["kernels"]
            assert kernels["path"] == path and "asked for" in kernels["why"]


def test_auto_runs_the_demo_on_the_reference_path_and_says_why(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LTR_KERNELS"}
    done = subprocess.run([sys.executable, "-m", "ltr_cli", "run", str(DEMO), "--out", str(tmp_path),
                           "--set", "dataset.queries=100"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reference path for 3 runs" in done.stderr and "compiling kernels" not in done.stderr
    for manifest in (tmp_path / "simulated_separable").glob("*/manifest.json"):
        kernels = json.loads(manifest.read_text())["kernels"]
        assert kernels["path"] == "reference" and kernels["mode"] == "auto" and kernels["learner_rounds"] == 300


def test_no_compile_notice_when_the_kernel_cache_is_warm(tmp_path):
    """A compiled run whose kernels are in the kernel cache loads them without a word, in a
    fresh process (the first run here fills the cache, if the suite had not)."""
    cfg = tmp_path / "small.yaml"
    cfg.write_text(DEMO.read_text().replace("queries: 1000", "queries: 30"))
    first = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "a"), "-q", "--kernels", "compiled"])
    assert first.exit_code == 0, first.output
    again = subprocess.run([sys.executable, "-m", "ltr_cli", "run", str(cfg), "--out", str(tmp_path / "b"),
                            "--kernels", "compiled"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "compiled path" in again.stderr and "compiling kernels" not in again.stderr


def test_the_compile_notice_comes_with_a_real_compile_only(tmp_path):
    """numba's compile event: a function compiled for the first time is reported (notice,
    then the total); loaded from the cache in a new process, nothing is said."""
    module = tmp_path / "tiny_kernel.py"
    module.write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def twice(x):
            return 2.0 * x
    """))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from ltr_cli.kernels import compile_watch
        from ltr_cli.protocols.warmup import compile_progress
        compile_watch.install()
        import tiny_kernel
        with compile_progress():
            tiny_kernel.twice(1.0)
        print(compile_watch.compiled)
    """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    said = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
            for _ in range(2)]
    assert [s.returncode for s in said] == [0, 0], said[0].stderr
    assert said[0].stdout.split() == ["1"] and "compiling kernels" in said[0].stderr
    assert "compiled 1 kernel functions" in said[0].stderr
    assert said[1].stdout.split() == ["0"] and "compil" not in said[1].stderr


def test_a_bad_kernels_choice_is_one_line(tmp_path):
    res = runner.invoke(app, ["run", str(DEMO), "--out", str(tmp_path), "--kernels", "fast"])
    assert res.exit_code == 1 and "--kernels fast: expected auto, compiled or reference" in res.stderr
    done = subprocess.run([sys.executable, "-m", "ltr_cli", "run", str(DEMO), "--out", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "LTR_KERNELS": "maybe"})
    assert done.returncode == 1 and "LTR_KERNELS='maybe'" in done.stderr and "Traceback" not in done.stderr


def test_bench_startup_prints_the_ratios_against_their_targets():
    """Whole processes side by side (one of each at --quick); the ratios are the figures'."""
    import re

    res = runner.invoke(app, ["bench", "--startup", "--quick"])
    assert res.exit_code == 0, res.output
    seconds = {label: float(x) for label, x in re.findall(r"^  (.+?)\s+([0-9.]+) s$", res.output, re.M)}
    ratios = {label: float(x) for label, x in re.findall(r"^  (.+?)\s+([0-9.]+)x ", res.output, re.M)}
    imports = seconds["python -c 'import numpy, pandas, pyarrow'"]
    one = seconds["ltr run, one round, warm"]
    cold, warm = seconds["demo ltr run, cold (empty kernel cache, HOME)"], seconds["demo ltr run, warm"]
    assert ratios["fixed cost: one round / imports"] == pytest.approx(one / imports, abs=0.015)
    assert ratios["first run: cold / warm"] == pytest.approx(cold / warm, abs=0.015)
    assert "the target 2x" in res.output and "the target 3x" in res.output
    cpu = re.search(r"fixed cost, compiled path: one round / imports\s+([0-9.]+)x", res.output)
    assert cpu and float(cpu.group(1)) > 0 and "the target 1.5x" in res.output
    assert re.search(r"mslr_slam on 60 MSLR-shaped queries .* cold [0-9.]+ \((reference|compiled) path", res.output)
    assert "the authors' 43-query job under Octave:" in res.output


def test_every_built_in_learner_writes_the_same_bytes_on_both_paths(tmp_path):
    """Each built-in online learner's examples (the conformance suite's) on a small file:
    the reference path and the compiled path write the same rounds.parquet and models.json."""
    from tests.conformance import examples, run_folders, same_files, source, write_config, write_data

    learners = {n: s for n, s in examples(feedback="labels").items() if source(n) == "built-in"}
    cfg = write_config(tmp_path / "c.yaml", [write_data(tmp_path / "d.txt", 30)], learners, "{passes: 1}")
    for path in ("reference", "compiled"):
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / path), "-q", "--kernels", path])
        assert res.exit_code == 0, res.output
    ref, fast = run_folders(tmp_path / "reference"), run_folders(tmp_path / "compiled")
    assert ref.keys() == fast.keys() == learners.keys()
    assert {n: same_files(ref[n], fast[n]) for n in ref if same_files(ref[n], fast[n])} == {}


def _tiny_queries(path: Path, features: int, queries: int = 24, seed: int = 0) -> Path:
    """Queries of one to five documents (a single document is its own shape for BLAS),
    graded labels, coarse feature values with repeated rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = []
    for q in range(queries):
        for _ in range(int(rng.integers(1, 6))):
            label = int(rng.integers(0, 3))
            feats = rng.integers(0, 4, size=features) / 3.0 + label * 0.25
            lines.append(f"{label} qid:{q + 1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(feats)))
    path.write_text("\n".join(lines) + "\n")
    return path


def _both_paths(tmp_path: Path, features: int, storage: str) -> tuple[dict, dict]:
    from tests.conformance import examples, run_folders, source

    learners = {n: s for n, s in examples(feedback="labels").items() if source(n) == "built-in"}
    data = _tiny_queries(tmp_path / "d.txt", features)
    held = _tiny_queries(tmp_path / "h.txt", features, queries=9, seed=1)
    body = "\n".join(f"  {name}: {json.dumps(spec)}" for name, spec in learners.items())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: conformance
seed: 3
fidelity: authors-code
dataset: {{kind: files, features: {features}, files: [{data}], storage: {storage}}}
protocol: {{passes: 2}}
heldout: {{file: {held}, every: 5}}
metrics: {{names: [ndcg@10, ap, p@5, ndcg], ties: input-order, no_relevant: one}}
learners:
{body}
""")
    for path in ("reference", "compiled"):
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / path), "-q", "--kernels", path])
        assert res.exit_code == 0, res.output
    ref, fast = run_folders(tmp_path / "reference"), run_folders(tmp_path / "compiled")
    assert ref.keys() == fast.keys() == learners.keys()
    return ref, fast


@pytest.mark.parametrize("features", [1, 3])
def test_both_paths_write_the_same_bytes_on_one_feature_and_one_document_queries(tmp_path, features):
    """One feature (X.T @ g is one dot product), queries of a single document (X @ w is one),
    two passes and a held-out file: rounds.parquet (heldout_* columns included) and
    models.json byte for byte."""
    from tests.conformance import same_files

    ref, fast = _both_paths(tmp_path, features, "float64")
    assert {n: same_files(ref[n], fast[n]) for n in ref if same_files(ref[n], fast[n])} == {}


def test_float32_storage_agrees_to_rounding_on_both_paths(tmp_path):
    """float32 rows are summed in float64 in another order on the compiled path (no copy
    to float64 for BLAS): the weights agree to rounding, not byte for byte (docs/kernels.md)."""
    import numpy as np

    ref, fast = _both_paths(tmp_path, 3, "float32")
    for name in ref:
        a, b = (json.loads((runs[name] / "models.json").read_text())["final"]["w"] for runs in (ref, fast))
        if None in a:  # an authors'-numerics run that overflowed: NaN on both paths alike
            assert [x is None for x in a] == [x is None for x in b], name
            continue
        wa, wb = np.array(a, dtype=float), np.array(b, dtype=float)
        assert np.allclose(wa, wb, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(wa).max())), name
