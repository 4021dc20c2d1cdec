"""A run imports what it uses: an online run on generated data loads neither pandas, nor
numba on the reference path, nor the modules of learners, data kinds and options it does
not run (the fixed cost of every run, ``ltr bench --startup``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "configs" / "simulated_separable.yaml"

_SCRIPT = """
import json, runpy, sys
sys.argv = ["ltr", *json.loads(sys.argv[1])]
try:
    runpy.run_module("ltr_cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_of(args: list[str], tmp_path: Path, path: tuple[Path, ...] = (),
                env: dict[str, str] | None = None) -> set[str]:
    env = {**_env(), "LTR_KERNELS": "0", **(env or {})}
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, path), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(args)], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["code"] in (0, None), done.stderr
    return set(said["modules"])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LTR_KERNELS"}


def test_a_one_round_online_run_imports_only_what_it_runs(tmp_path: Path) -> None:
    loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / "out"),
                          "--set", "dataset.queries=1", "--set", "protocol.max_rounds=1"], tmp_path)
    assert (tmp_path / "out" / "simulated_separable").is_dir()
    for heavy in ("pandas", "numba", "matplotlib", "scipy", "lightgbm"):
        assert heavy not in loaded, f"a one-round online run imported {heavy}"
    unused = [m for m in loaded if m.startswith(("ltr_cli.learners.batch", "ltr_cli.data.sources.files",
                                                  "ltr_cli.data.svmlight", "ltr_cli.data.cache",
                                                  "ltr_cli.protocols.heldout", "ltr_cli.protocols.regret",
                                                  "ltr_cli.results.gbdt", "ltr_cli.learners.online.rtopkf"))]
    assert not unused, f"modules the demo does not use were imported: {unused}"
    assert "ltr_cli.learners.online.perceptron" in loaded and "ltr_cli.learners.online.ogd" in loaded


def _installed(site: Path, name: str, entries: str) -> None:
    """A distribution's metadata with entry points, as pip would leave it."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entries)


_PLUGIN_METRIC = "from ltr_cli.api import MetricKind\nKIND = MetricKind('top gain', lambda r, y, m: 0.0)\n"
_PLUGIN_FORMAT = ("from ltr_cli.api import DataFormat\nfrom ltr_cli.data.formats.parquet_table import ParquetReader\n"
                  "FMT = DataFormat('mine', ('.mine',), 'a table', ParquetReader)\n")


def test_installed_plugins_are_not_imported_by_a_run_that_does_not_name_them(tmp_path: Path) -> None:
    """The example plugin, and a metric and a format plugin, installed beside the package:
    a one-round run on generated data, and one on a text file, import none of them, nor any
    learner they do not run."""
    site = tmp_path / "site"
    _installed(site, "ltr-averaged-perceptron", "[ltr_cli.learners]\n"
               "averaged-perceptron = ltr_averaged_perceptron:AveragedPerceptronSpec\n")
    _installed(site, "other-kinds", "[ltr_cli.metrics]\ntopgain = plugin_metric:KIND\n"
               "[ltr_cli.formats]\nmine = plugin_format:FMT\n")
    (site / "plugin_metric.py").write_text(_PLUGIN_METRIC)
    (site / "plugin_format.py").write_text(_PLUGIN_FORMAT)
    path = (site, ROOT / "examples" / "ltr-averaged-perceptron")
    data = tmp_path / "a.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.25\n2 qid:2 1:1\n0 qid:2 1:0\n")
    generated = ["--set", "dataset.queries=1"]
    files = ["--set", "dataset={kind: files, features: 1, files: [" + str(data) + "]}"]
    for i, dataset in enumerate((generated, files)):
        loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / f"out{i}"), *dataset,
                              "--set", "protocol.max_rounds=1"], tmp_path, path)
        unused = [m for m in loaded if m.startswith(("ltr_averaged_perceptron", "plugin_", "ltr_cli.learners.batch",
                                                      "ltr_cli.learners.online.rtopkf"))]
        assert not unused, f"modules the run does not use were imported: {unused}"
        assert "ltr_cli.learners.online.perceptron" in loaded
    # named, they are imported
    loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / "named"), "--set", "dataset.queries=1",
                          "--set", "protocol.max_rounds=1", "--set", "learners.avg.type=averaged-perceptron",
                          "--set", "metrics.names=[topgain]"], tmp_path, path)
    assert {"ltr_averaged_perceptron", "plugin_metric"} <= loaded and "plugin_format" not in loaded


@pytest.mark.parametrize("setting, module", [
    ("learners.extra.type=rtopkf", "ltr_cli.learners.online.rtopkf"),
    ("protocol.log_regret=true", "ltr_cli.protocols.regret"),
])
def test_what_a_config_names_is_imported(tmp_path: Path, setting: str, module: str) -> None:
    """The lazy registry and the options load their modules when a config asks for them."""
    extra = ["--set", "learners.extra.surrogate=squared"] if "rtopkf" in setting else []
    loaded = _modules_of(["run", str(DEMO), "-q", "--out", str(tmp_path / "out"), "--set", "dataset.queries=2",
                          "--set", "protocol.max_rounds=2", "--set", setting, *extra], tmp_path)
    assert module in loaded


def test_a_run_on_a_small_text_file_parses_it_without_loading_numba(tmp_path: Path) -> None:
    """A small plain-text file is read by the reference parser (loading numba for the
    compiled scanner would cost more than the whole parse); the run's results are those of
    the compiled scanner's reading."""
    data = tmp_path / "train.txt"
    data.write_text("2 qid:1 1:0.5 3:1\n0 qid:1 2:0.25\n1 qid:2 1:1 136:2\n0 qid:2 5:1\n0 qid:3 1:1\n")
    config = str(ROOT / "configs" / "mslr_slam.yaml")
    args = ["run", config, "-q", "--data", str(data), "--learner", "slam-ndcg"]
    for ahead in ("0", "1"):  # the scanner not built ahead (numba's), or built ahead if it is here
        out = tmp_path / f"small-{ahead}"
        loaded = _modules_of([*args, "--out", str(out)], tmp_path, env={"LTR_AHEAD": ahead})
        assert (out / "mslr_slam").is_dir()
        assert "numba" not in loaded and "ltr_cli.data.fastscan" not in loaded


def test_large_or_compressed_files_are_left_to_the_compiled_scanner(tmp_path: Path, monkeypatch) -> None:
    """Small plain-text files are read by the reference parser; a compressed one, or small
    ones that are large in all (a dataset's folds), by the compiled scanner."""
    import gzip
    import sys

    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.sources import files
    from ltr_cli.kernels import ahead

    text = b"2 qid:1 1:0.5 3:1\n0 qid:1 2:0.25\n"
    plain, other, packed = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "a.txt.gz"
    plain.write_bytes(text)
    other.write_bytes(text)
    packed.write_bytes(gzip.compress(text))
    monkeypatch.delitem(sys.modules, "ltr_cli.data.fastscan", raising=False)
    monkeypatch.setattr(ahead, "available", lambda ref: False)  # numba's scanner: a cost to load

    def engines(paths: list[Path]) -> list[str]:
        source = files.FileSource(3, "d", "files", paths, ReaderOptions(n_features=3))
        return [source.unit_options(u).engine for u in range(len(paths))]

    assert engines([plain, other]) == ["reference", "reference"]
    assert engines([plain, packed]) == ["auto", "auto"]
    assert files.scanner_pays([tmp_path / "missing.txt"])  # the reader then says why it cannot read it
    monkeypatch.setattr(files, "SCANNER_FROM_BYTES", len(text) + 1)
    assert engines([plain]) == ["reference"] and engines([plain, other]) == ["auto", "auto"]
    monkeypatch.setattr(ahead, "available", lambda ref: ref == files.SCANNER)  # built ahead: no cost
    assert engines([plain]) == ["auto"]
