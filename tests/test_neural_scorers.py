"""The neural scorers, feature transforms, batches and model files, on tiny arrays: shapes,
padding that never reaches a real document, transforms fitted on train only and saved with
the model, hostile model files refused."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("safetensors")

from ltr_cli.errors import LtrError, QueryTooLong  # noqa: E402
from ltr_cli.neural import batching, scorers, transforms  # noqa: E402
from ltr_cli.neural.jaxenv import jax  # noqa: E402
from ltr_cli.neural.model import NeuralModel  # noqa: E402

BLOCKS = [{"kind": "linear"},
          {"kind": "mlp", "hidden": [6, 5], "dropout": 0.2, "input_norm": True},
          {"kind": "attention", "input": 8, "blocks": 1, "heads": 2, "ff": 8, "dropout": 0.1},
          {"kind": "attention", "input": 4, "blocks": 1, "ff": 4, "positional": "learned", "max_positions": 5},
          {"kind": "dasalc", "hidden": 6, "layers": 1, "attention_layers": 1, "heads": 1, "head_size": 4}]


def _batch(L: int = 9, d: int = 5):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, L, d)).astype(np.float32)
    mask = np.ones((3, L), bool)
    mask[1, 5:] = False
    mask[2, 1:] = False
    X[~mask] = 0.0
    return X, mask


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b["kind"] + ("-pos" if "positional" in b else ""))
def test_shapes_and_padding_never_reaches_a_real_document(block):
    j = jax()
    scorer = scorers.build(block)
    params = j.jit(lambda k: scorer.init(k, 5))(j.random.PRNGKey(0))
    X, mask = _batch()
    # evaluation and training (dropout, noise from the key) in one compiled program
    fn = j.jit(lambda p, X, m, k: (scorer.apply(p, X, m), scorer.apply(p, X, m, train=True, key=k)))
    clean, trained = map(np.asarray, fn(params, X, mask, j.random.key(1, impl="rbg")))
    assert clean.shape == trained.shape == (3, 9) and np.isfinite(clean).all() and np.isfinite(trained).all()
    hostile = X.copy()
    hostile[~mask] = 1e30  # whatever a padded row holds
    again, trained_again = map(np.asarray, fn(params, hostile, mask, j.random.key(1, impl="rbg")))
    assert np.array_equal(again[mask], clean[mask]) and np.array_equal(trained_again[mask], trained[mask])


def test_several_outputs_per_document_are_ranked_by_their_sum():
    j = jax()
    many = scorers.build({"kind": "linear", "output_activation": "sigmoid"}, outputs=3)
    X, mask = _batch()
    out = np.asarray(many.apply(many.init(j.random.PRNGKey(0), 5), X, mask))
    assert out.shape == (3, 9, 3) and ((out > 0) & (out < 1)).all()
    assert np.array_equal(np.asarray(many.ranking(out)), out.sum(-1))


def test_attention_padding_to_any_length_leaves_real_scores_unchanged():
    """A slate scored padded to 9 or to 16 documents: the real documents' scores agree to
    rounding (another length is another program), and padding never enters the softmax."""
    j = jax()
    scorer = scorers.build({"kind": "attention", "input": 8, "blocks": 2, "heads": 2, "ff": 8})
    params = j.jit(lambda k: scorer.init(k, 5))(j.random.PRNGKey(3))
    X, mask = _batch(9)
    wide = np.zeros((3, 16, 5), np.float32)
    wide[:, :9] = X
    wide_mask = np.zeros((3, 16), bool)
    wide_mask[:, :9] = mask
    fn = j.jit(lambda p, X, m: scorer.apply(p, X, m))
    a = np.asarray(fn(params, X, mask))
    b = np.asarray(fn(params, wide, wide_mask))[:, :9]
    np.testing.assert_allclose(a[mask], b[mask], rtol=1e-5, atol=1e-6)
    # a real document's score depends on the other real documents (context-aware)...
    other = X.copy()
    other[0, 1] += 1.0
    assert not np.array_equal(np.asarray(fn(params, other, mask))[0, 0], a[0, 0])


def test_scorer_settings_are_checked_in_one_line():
    with pytest.raises(ValueError, match="scorer kind mlp has no key 'hiden'; its keys are"):
        scorers.settings_of({"kind": "mlp", "hiden": [3]})
    with pytest.raises(ValueError, match="unknown scorer kind 'cnn'; the kinds are"):
        scorers.settings_of({"kind": "cnn"})
    with pytest.raises(ValueError, match="3 heads do not divide the encoder's width 8"):
        scorers.settings_of({"kind": "attention", "input": 8, "heads": 3})
    with pytest.raises(ValueError, match="activation 'swish' is not one of"):
        scorers.settings_of({"kind": "mlp", "activation": "swish"})
    assert scorers.normalized({"kind": "attention", "input": 16})["input"] == [16]
    assert set(scorers.names()) >= {"linear", "mlp", "attention", "dasalc"}


def _queries(rng, n, d=4, shift=0.0):
    return [rng.normal(loc=shift, size=(int(rng.integers(2, 7)), d)) * 3 for _ in range(n)]


@pytest.mark.parametrize("spec", ["zscore", {"kind": "allrank", "features_negative": [1],
                                             "features_without_logarithm": [2]},
                                  ["log1p", "zscore"], "query_zscore", "query_minmax"],
                         ids=["zscore", "allrank", "log1p+zscore", "query_zscore", "query_minmax"])
def test_transforms_are_fitted_on_train_only_and_round_trip(spec):
    rng = np.random.default_rng(1)
    train = [np.abs(X) for X in _queries(rng, 6)]
    vali = [np.abs(X) for X in _queries(rng, 3, shift=5.0)]  # other statistics: must not be used
    t = transforms.fit(transforms.parse(spec), train, 4)
    Z = np.vstack([t.apply(X) for X in train]).astype(np.float64)
    if spec == "zscore" or isinstance(spec, list):
        np.testing.assert_allclose(Z.mean(0), 0, atol=1e-5)
        np.testing.assert_allclose(Z.std(0), 1, atol=1e-5)
        assert np.abs(np.vstack([t.apply(X) for X in vali]).mean(0)).max() > 0.5  # vali not centred
    if isinstance(spec, dict):
        raw = np.vstack(train)
        col0 = np.log(raw[:, 0] + 0.01)  # logged, then z-scored on train (std + 1e-6)
        np.testing.assert_allclose(Z[:, 0], (col0 - col0.mean()) / (col0.std() + 1e-6), rtol=1e-5, atol=1e-5)
        col2 = raw[:, 2]  # without logarithm
        np.testing.assert_allclose(Z[:, 2], (col2 - col2.mean()) / (col2.std() + 1e-6), rtol=1e-5, atol=1e-5)
        assert t.describe()[0]["features_negative"] == [1] and not t.steps[0].arrays["logged"][1]
    again = transforms.Transform.restore(t.describe(), t.named_arrays(), 4)
    assert all(np.array_equal(again.apply(X), t.apply(X)) for X in vali)
    assert all(t.apply(X).dtype == np.float32 for X in vali)


def test_transform_records_are_checked():
    rng = np.random.default_rng(2)
    t = transforms.fit(transforms.parse("zscore"), _queries(rng, 3), 4)
    arrays = t.named_arrays()
    with pytest.raises(ValueError, match="std is not 4 values of float64"):
        transforms.Transform.restore(t.describe(), {**arrays, "transform/0/std": np.ones(3)}, 4)
    with pytest.raises(ValueError, match="not finite"):
        transforms.Transform.restore(t.describe(), {**arrays, "transform/0/mean": np.full(4, np.nan)}, 4)
    with pytest.raises(ValueError, match="unknown transform 'pca'"):
        transforms.Transform.restore([{"kind": "pca"}], arrays, 4)
    with pytest.raises(ValueError, match="which no transform step reads"):
        transforms.Transform.restore([], arrays, 4)
    with pytest.raises(LtrError, match="names column 9, but the data has 4 features"):
        transforms.fit(transforms.parse({"kind": "allrank", "features_negative": [9]}), _queries(rng, 2), 4)


def test_batches_are_seeded_padded_to_buckets_and_subsampled_as_allrank():
    rng = np.random.default_rng(0)
    parts = [(rng.normal(size=(m, 3)).astype(np.float32), (np.arange(m) == 0).astype(np.float32))
             for m in (3, 20, 5, 9, 1)]
    data = batching.pack(parts, 3)
    first = list(batching.epoch_batches(data, 2, 12, np.random.default_rng(7)))
    again = list(batching.epoch_batches(data, 2, 12, np.random.default_rng(7)))
    assert [b.X.shape for b in first] == [b.X.shape for b in again]
    assert all(np.array_equal(a.X, b.X) and np.array_equal(a.positions, b.positions) for a, b in zip(first, again))
    assert all(b.X.shape[0] == 2 and b.X.shape[1] in (8, 12) for b in first)  # fixed Q, buckets capped at slate
    assert sum(b.queries for b in first) == 5 and first[-1].queries == 1  # the last batch filled with an empty slate
    for b in first:
        assert not b.X[~b.mask].any() and (b.mask.sum(1) <= 12).all()
        for i in range(b.queries):  # the 20-document query keeps its one relevant document (labels sum to 1)
            if b.mask[i].sum() == 12:
                assert b.labels[i].sum() == 1.0
    assert [batching.bucket(n) for n in (1, 8, 9, 100, 4097)] == [8, 8, 16, 128, 8192]


def _model(block, d=5, budget=None):
    j = jax()
    scorer = scorers.build(block)
    params = j.jit(lambda k: scorer.init(k, d))(j.random.PRNGKey(0))
    from ltr_cli.neural.arrays import named

    t = transforms.fit(transforms.parse("zscore"), [np.random.default_rng(0).normal(size=(6, d))], d)
    flat = {k: np.asarray(v, np.float32) for k, v in named(params, "params").items()}
    return NeuralModel(scorers.normalized(block), 1, t, flat, d, budget=budget)


def test_model_bytes_round_trip_and_hostile_files_are_refused():
    m = _model({"kind": "mlp", "hidden": [4]})
    data = m.to_bytes()
    assert data == m.to_bytes()  # the same model, the same bytes
    back = NeuralModel.from_bytes(data, 5)
    X = np.random.default_rng(1).normal(size=(7, 5))
    assert np.array_equal(back.scores(X), m.scores(X)) and m.scores(X).dtype == np.float64
    assert np.array_equal(NeuralModel.from_dict(m.to_dict()).scores(X), m.scores(X))
    from ltr_cli.neural import arrays

    found, record = arrays.decode(data, 1 << 30)

    def refused(found, record, match):
        with pytest.raises(ValueError, match=match):
            NeuralModel.from_bytes(arrays.encode(found, record))

    refused({**found, "params/layer0/w": np.zeros((5, 9), np.float32)}, record, "is float32 \\[5, 9\\], not float32")
    refused({**found, "params/output/b": np.array([np.inf], np.float32)}, record, "is not finite")
    refused({**found, "params/extra": np.zeros(2, np.float32)}, record, "has no place for")
    refused(found, {**record, "scorer": {"kind": "mlp"}}, "not a complete scorer block")
    refused(found, {**record, "features": True}, "features must be an integer")
    refused(found, {**record, "format": "pickle"}, "not a neural model of this tool")
    for junk in (b"", b"\x80\x04\x95" + b"x" * 40, data[:-3], b"\xff" * 8 + data[8:]):
        with pytest.raises(ValueError, match="not a named-array file|not a file this tool wrote"):
            NeuralModel.from_bytes(junk)
    with pytest.raises(ValueError, match="the model file has 5 features, models.json says 6"):
        NeuralModel.from_bytes(data, 6)


def test_a_query_too_long_for_the_budget_is_named_in_one_line(tmp_path):
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.results.scoring import score_lines

    m = _model({"kind": "attention", "input": 4, "blocks": 1, "ff": 4}, budget=200_000)
    assert m.scores(np.zeros((20, 5))).shape == (20,)
    with pytest.raises(QueryTooLong, match="a query of 600 documents is too long to score on this device"):
        m.scores(np.zeros((600, 5)))
    lines = ["0 qid:1 1:0.5"] * 3 + ["1 qid:2 1:0.5"] * 600
    path = tmp_path / "long.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LtrError, match=r"long.txt:4: query 2: a query of 600 documents"):
        score_lines(m, path, ReaderOptions(n_features=5))
    # a per-document scorer scores a long query in pieces, never refusing it
    assert _model({"kind": "mlp", "hidden": [3]}, budget=1).scores(np.zeros((batching.DOC_CHUNK + 5, 5))).shape \
        == (batching.DOC_CHUNK + 5,)
