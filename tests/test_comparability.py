"""Paper comparisons: a run's data and protocol against the paper's setup decide whether
``ltr report`` shows a difference from the paper's number."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from ltr_cli.reports.comparability import perceptron_verdict


def _run(rounds=30_000, files=None, passes=1, shuffle=False, keep=1.0, no_relevant="one", ties="reverse-input",
         dataset="mslr-web10k"):
    files = files if files is not None else [{"path": f"Fold{i}/train.txt", "xxh3_128": f"d{i}"} for i in range(1, 6)]
    return SimpleNamespace(
        summary={"dataset": dataset, "rounds": rounds, "role": "slam-ndcg"},
        config={"protocol": {"passes": passes, "shuffle": shuffle, "keep_probability": keep},
                "metrics": {"no_relevant": no_relevant, "ties": ties}},
        manifest={"dataset": {"fingerprint": {"files": files}}})


def test_the_papers_setup_is_comparable():
    v = perceptron_verdict([_run(rounds=29_995)])
    assert v is not None and v.comparable and v.text() == "comparable"
    v = perceptron_verdict([_run(), _run()])
    assert v.comparable and "mean of 2 seeds" in v.text()


@pytest.mark.parametrize("kwargs,says", [
    ({"rounds": 1_075}, "1,075 rounds (paper: about 30,000)"),
    ({"passes": 5}, "passes 5 (paper: 1)"),
    ({"shuffle": True}, "shuffle True (paper: False)"),
    ({"keep": 0.8}, "keep-probability 0.8 (paper: 1.0)"),
    ({"ties": "input-order"}, "ties input-order"),
    ({"files": [{"path": f"Fold{i}/train.txt", "xxh3_128": "same"} for i in range(1, 6)]},
     "4 of its data files are copies of another"),
    ({"files": [{"path": "train.txt", "xxh3_128": "x"}]}, "1 data file (paper: 5)"),
])
def test_each_difference_is_named(kwargs, says):
    v = perceptron_verdict([_run(**kwargs)])
    assert v is not None and not v.comparable
    assert says in v.text() and "the paper: one pass over Fold1..Fold5" in v.text()


def test_no_setup_no_verdict():
    assert perceptron_verdict([_run(dataset="shaped:mslr-web10k")]) is None


def _batch(folds=5, convention="letor3", queries=106, documents=16_140, normalize="none", files=None,
           dataset="letor2-ohsumed"):
    if files is None:  # LETOR's rotation: fold k's test subset is fold k+1's vali subset
        files = [{"xxh3_128": f"train{k}", "used_as": [{"fold": k, "role": "train"}]} for k in range(1, 6)]
        files += [{"xxh3_128": f"S{k}", "used_as": [{"fold": k, "role": "test"}, {"fold": k % 5 + 1, "role": "vali"}]}
                  for k in range(1, 6)]
    return SimpleNamespace(
        summary={"dataset": dataset, "folds": list(range(1, folds + 1)), "convention": convention,
                 "test_queries": queries, "test_documents": documents, "role": "SVMmap"},
        config={"dataset": {"normalize": normalize}},
        manifest={"dataset": {"fingerprint": {"files": files}}})


def test_batch_runs_against_the_letor_protocol():
    from ltr_cli.reports.comparability import direct_optimisation_verdict

    assert direct_optimisation_verdict(_batch()).comparable
    same = [{"xxh3_128": "x", "used_as": [{"fold": 1, "role": "train"}]},
            {"xxh3_128": "x", "used_as": [{"fold": 1, "role": "test"}]}]
    one_path = [{"xxh3_128": "x", "used_as": [{"fold": 2, "role": "vali"}, {"fold": 2, "role": "test"}]}]
    for kwargs, says in (({"folds": 3}, "3 folds (paper: 5)"), ({"convention": "paper"}, "convention paper"),
                         ({"queries": 40}, "40 queries over the test folds (the dataset has 106)"),
                         ({"normalize": "zscore"}, "normalize zscore"),
                         ({"files": same}, "fold 1: the test file is a copy of the train file"),
                         ({"files": one_path}, "fold 2: the test file is a copy of the vali file")):
        v = direct_optimisation_verdict(_batch(**kwargs))
        assert not v.comparable and says in v.text(), (kwargs, v.text())
    assert direct_optimisation_verdict(_batch(dataset="mslr-web10k")) is None


def test_letor3_runs_are_another_data_version():
    """The paper's numbers were measured on LETOR 2.0: a LETOR 3.0 run gets no number and
    a verdict naming both versions, never a difference from numbers of other data."""
    from ltr_cli.reports.comparability import direct_optimisation_verdict
    from ltr_cli.reports.paper_numbers import batch_paper_value

    assert batch_paper_value("letor2-ohsumed", "SVMmap", "ap") == 0.4456
    assert batch_paper_value("letor2-td2004", "RankBoost", "ndcg@3") == 0.4640
    assert batch_paper_value("letor3-ohsumed", "SVMmap", "map") is None
    for name, features in (("ohsumed", 25), ("td2003", 44), ("td2004", 44)):
        v = direct_optimisation_verdict(_batch(dataset=f"letor3-{name}", queries=None, documents=None))
        assert v is not None and not v.comparable
        assert v.differences[0] == (f"other data version: the paper used LETOR 2.0 {name.upper()} ({features} "
                                    f"features); this run: LETOR 3.0 {name.upper()} ({45 if features == 25 else 64} "
                                    "features)")


def _rotated_letor(root: Path, copy: dict[int, tuple[str, str]] | None = None) -> None:
    """LETOR's layout written by hand: five subsets S1..S5; fold k trains on three of
    them, validates on the next and tests on the one after (Fold1: S1-S3, S4, S5; Fold2:
    S2-S4, S5, S1; ...). ``copy`` {fold: (role, from_role)} overwrites a file with another
    of the same fold."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight

    info = get_dataset("letor2-ohsumed")
    subsets = []
    for k in range(5):
        buf = root / f"S{k + 1}.txt"
        queries = [replace(q, qid=str(10 * k + int(q.qid))) for q in shaped_queries(info, ShapeSpec(3, 6, seed=k))]
        root.mkdir(parents=True, exist_ok=True)
        write_svmlight(buf, iter(queries))
        subsets.append(buf.read_bytes())
    for fold in range(1, 6):
        i = fold - 1
        content = {"train": b"".join(subsets[(i + j) % 5] for j in range(3)), "vali": subsets[(i + 3) % 5],
                   "test": subsets[(i + 4) % 5]}
        if copy and fold in copy:
            role, source = copy[fold]
            content[role] = content[source]
        for role, data in content.items():
            path = info.path_for(root, role, fold)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def _verdict_on(root: Path, strip_roles: bool = False):
    """The batch verdict of a run on the folds under ``root``, with the fingerprint ``ltr
    run`` records (``strip_roles``: as runs recorded before it named each file's roles),
    and the dataset's own query and document counts."""
    from ltr_cli.config.experiment import parse_config
    from ltr_cli.protocols.cv_folds import folds_identity, open_folds
    from ltr_cli.runs.plan import folds_plan
    from ltr_cli.reports.comparability import direct_optimisation_verdict

    spec = parse_config({"experiment": "x", "cv": {}, "learners": {"s": {"type": "svmmap"}},
                         "dataset": {"kind": "registry", "name": "letor2-ohsumed", "root": str(root)}})
    identity = folds_identity(open_folds(folds_plan(spec, None)))
    if strip_roles:
        identity = {"files": [{k: v for k, v in f.items() if k != "used_as"} for f in identity["files"]]}
    run = _batch(files=identity["files"])
    run.config = spec.resolved()
    return direct_optimisation_verdict(run), identity


@pytest.mark.parametrize("strip_roles", [False, True])
def test_letors_fold_rotation_is_not_a_copy(tmp_path, strip_roles):
    _rotated_letor(tmp_path)
    assert (tmp_path / "Fold2" / "validationset.txt").read_bytes() == (tmp_path / "Fold1" / "testset.txt").read_bytes()
    verdict, identity = _verdict_on(tmp_path, strip_roles)
    assert len(identity["files"]) == 15
    assert len({f["xxh3_128"] for f in identity["files"]}) == 10  # 5 training files, 5 subsets
    assert verdict is not None and verdict.comparable, verdict.text()


@pytest.mark.parametrize("strip_roles", [False, True])
@pytest.mark.parametrize("copy,says", [
    ({3: ("test", "train")}, "fold 3: the test file is a copy of the train file of the same fold"),
    ({2: ("test", "vali"), 4: ("test", "vali")}, "folds 2, 4: the test file is a copy of the vali file"),
    ({5: ("vali", "train")}, "fold 5: the vali file is a copy of the train file"),
])
def test_a_fold_reading_one_file_twice_is_a_copy(tmp_path, copy, says, strip_roles):
    _rotated_letor(tmp_path, copy)
    verdict, _ = _verdict_on(tmp_path, strip_roles)
    assert verdict is not None and not verdict.comparable and says in verdict.text(), verdict.text()
    assert verdict.text().count("copy") == 1


def test_a_group_file_is_not_a_data_file():
    """Yahoo in LightGBM's layout: set1.train.txt and its set1.train.txt.query are one data file."""
    data = {"path": "/d/set1.train.txt", "xxh3_128": "a"}
    for group in ({"path": "/d/set1.train.txt.query", "xxh3_128": "g", "group": True},
                  {"path": "/d/set1.train.txt.query", "xxh3_128": "g"},  # recorded before groups were marked
                  {"path": "/d/sizes.txt", "xxh3_128": "g", "group": True}):
        run = _run(dataset="yahoo-set1", rounds=63_800, passes=4, keep=0.8, files=[data, group])
        v = perceptron_verdict([run])
        assert v is not None and v.comparable, (group, v.text())
    # MSLR's five training files with a group file each, two group files alike (same query sizes)
    files = []
    for i in range(1, 6):
        files += [{"path": f"/m/Fold{i}/train.txt", "xxh3_128": f"d{i}"},
                  {"path": f"/m/Fold{i}/train.txt.query", "xxh3_128": "same", "group": True}]
    assert perceptron_verdict([_run(files=files)]).comparable
