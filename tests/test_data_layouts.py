"""Data layouts without guessing: registry datasets take the reader overrides (qid source,
group files next to the data, index base), files datasets can name the registry dataset
they hold (kept in reports), and path errors name the absolute path and its directory."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app

runner = CliRunner()

LEARNER = "learners: {slam: {type: slam-perceptron}}\nmetrics: {names: [ndcg@10]}\n"


def _group_layout(root: Path, name: str = "set1.train.txt", queries: int = 4) -> None:
    """A LightGBM-style file (no qid tokens, index base 0) with its .query group file."""
    root.mkdir(parents=True, exist_ok=True)
    lines, sizes = [], []
    for q in range(queries):
        sizes.append(3)
        for d in range(3):
            lines.append(f"{(q + d) % 3} 0:{0.1 * d:.1f} 5:{q + 1}.0 699:1.0")
    (root / name).write_text("\n".join(lines) + "\n")
    (root / f"{name}.query").write_text("\n".join(map(str, sizes)) + "\n")


def _run(cfg: Path, *extra: str):
    return runner.invoke(app, ["run", str(cfg), "--out", str(cfg.parent / "res"), "-q", *extra])


def test_registry_dataset_takes_qid_group_and_index_base(tmp_path):
    root = tmp_path / "yahoo"
    _group_layout(root)
    cfg = tmp_path / "y.yaml"
    cfg.write_text(f"experiment: y\npaper: perceptron\ndataset: {{kind: registry, name: yahoo-set1, root: {root}}}\n" + LEARNER)
    res = _run(cfg)  # the dataset's usual qid tokens are missing
    assert res.exit_code == 1 and "set1.train.txt" in res.stderr
    res = _run(cfg, "--set", "dataset.qid=group", "--set", "dataset.index_base=0")
    assert res.exit_code == 0, res.stderr
    run_dir = Path(res.stdout.strip())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["dataset"] == "yahoo-set1" and summary["rounds"] == 4
    res = runner.invoke(app, ["report", str(tmp_path / "res"), "--format", "csv"])
    assert res.exit_code == 0 and ',"yahoo-set1 sample (4 of 19,944 queries)",' in res.stdout  # as the figures say
    # the .query group file is recorded as the data file's group file, not as a second data file
    files = json.loads((run_dir / "manifest.json").read_text())["dataset"]["fingerprint"]["files"]
    assert [f.get("group", False) for f in files] == [False, True]
    verdict = next(csv.DictReader(io.StringIO(res.stdout)))["vs_paper"]
    assert verdict.startswith("no paper number: the perceptron paper's is for another protocol"), verdict
    # under the paper's protocol the verdict counts one data file, as the paper's
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "paper"), "-q", "--set", "dataset.qid=group",
                              "--set", "dataset.index_base=0", "--set", "protocol.passes=4",
                              "--set", "protocol.keep_probability=0.8"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["report", str(tmp_path / "paper"), "--format", "csv"])
    verdict = next(csv.DictReader(io.StringIO(res.stdout)))["vs_paper"]
    assert verdict.startswith("not comparable: ") and "rounds (paper: about 63,800)" in verdict, verdict
    assert "data file" not in verdict, verdict


def test_registry_overrides_are_validated(tmp_path):
    cfg = tmp_path / "y.yaml"
    cfg.write_text(f"experiment: y\ndataset: {{kind: registry, name: yahoo-set1, root: {tmp_path}}}\n" + LEARNER)
    res = _run(cfg, "--set", "dataset.qid=grp")
    assert res.exit_code == 1 and "dataset.qid" in res.stderr and "group" in res.stderr
    res = _run(cfg, "--set", "dataset.index_base=2")
    assert res.exit_code == 1 and "dataset.index_base" in res.stderr


def test_unset_overrides_keep_run_ids():
    """Configs that do not use the new keys keep the run ids they had before the keys
    existed (ids computed by the previous release), so their results are found again."""
    from ltr_cli.config.experiment import parse_config

    learners = {"slam": {"type": "slam-perceptron"}}
    for dataset, before in [({"kind": "files", "files": ["/x/a.txt"], "features": 3}, "slam-19a2a411c2"),
                            ({"kind": "registry", "name": "mslr-web10k", "root": "/x", "folds": [1]},
                             "slam-5079327b96")]:
        spec = parse_config({"experiment": "e", "seed": 0, "dataset": dataset, "learners": learners})
        assert spec.run_id("slam") == before
        named = parse_config({"experiment": "e", "seed": 0, "learners": learners,
                              "dataset": {**dataset, "index_base": 0}})
        assert named.run_id("slam") != before


def test_files_dataset_can_name_its_registry_dataset(tmp_path):
    root = tmp_path / "mslr"
    root.mkdir()
    lines = [f"{(q + d) % 3} qid:{q} 1:{d}.0 136:1.0" for q in range(1, 4) for d in range(4)]
    (root / "part.txt").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "m.yaml"
    cfg.write_text(f"experiment: m\npaper: perceptron\ndataset: {{kind: files, name: mslr-web10k, files: [{root / 'part.txt'}], "
                   "storage: float32}\n" + LEARNER)
    res = _run(cfg)
    assert res.exit_code == 0, res.stderr
    run_dir = Path(res.stdout.strip())
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert summary["dataset"] == "mslr-web10k"
    assert manifest["dataset"]["n_features"] == 136
    assert json.loads(json.dumps(manifest))["dataset"]["description"] == "mslr-web10k files"
    config = (run_dir / "config.yaml").read_text()
    assert "storage: float32" in config and "name: mslr-web10k" in config
    res = runner.invoke(app, ["report", str(tmp_path / "res"), "--format", "csv"])
    row = next(line for line in res.stdout.splitlines() if ",ndcg@10," in line)
    assert "mslr-web10k" in row and "not comparable" in row  # the paper's number, with its verdict
    bad = tmp_path / "b.yaml"
    bad.write_text(cfg.read_text().replace("name: mslr-web10k", "name: mslr-web1k"))
    res = _run(bad)
    assert res.exit_code == 1 and "dataset.name" in res.stderr and "mslr-web10k" in res.stderr
    nowidth = tmp_path / "n.yaml"
    nowidth.write_text(cfg.read_text().replace("name: mslr-web10k, ", ""))
    res = _run(nowidth)
    assert res.exit_code == 1 and "dataset.features" in res.stderr


@pytest.mark.parametrize("args,path", [
    (["run", "nope.yaml"], "nope.yaml"),
    (["data", "inspect", "data/none.txt"], "data/none.txt"),
    (["report", "results/none"], "results/none"),
    (["plot", "results/none"], "results/none"),
])
def test_path_errors_name_the_absolute_path_and_its_directory(tmp_path, args, path):
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = runner.invoke(app, args)
    finally:
        os.chdir(here)
    assert res.exit_code == 1
    assert f"{tmp_path / path}, resolved from {tmp_path}" in res.stderr


def test_missing_registry_files_name_the_absolute_path(tmp_path):
    cfg = tmp_path / "r.yaml"
    cfg.write_text("experiment: r\ndataset: {kind: registry, name: mslr-web10k, root: data/MSLR, folds: [1]}\n"
                   + LEARNER)
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = runner.invoke(app, ["run", str(cfg)])
    finally:
        os.chdir(here)
    assert res.exit_code == 1
    assert f"{tmp_path / 'data/MSLR/Fold1/train.txt'}, resolved from {tmp_path}" in res.stderr


def test_annotated_config_shows_the_true_defaults():
    """docs/configs.md's annotated config: every value written there is the schema's default
    (a minimal config with only the kinds and types resolves to the same settings)."""
    from ltr_cli.config.experiment import parse_config
    from ltr_cli.core.yamlio import parse_yaml
    from tests.conftest import REPO

    page = (REPO / "docs" / "configs.md").read_text()
    start = page.index("```yaml\n", page.index("## An annotated config")) + len("```yaml\n")
    block = parse_yaml(page[start:page.index("```", start)])
    full = parse_config(block, "docs/configs.md").resolved()
    minimal = {"experiment": block["experiment"], "dataset": {"kind": block["dataset"]["kind"]},
               "learners": {name: {k: v for k, v in spec.items() if k in ("type", "surrogate")}
                            for name, spec in block["learners"].items()}}
    assert full == parse_config(minimal, "minimal").resolved()
