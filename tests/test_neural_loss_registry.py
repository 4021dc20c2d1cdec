"""The neural losses' registry and the public ``api.ranking_loss``: names and aliases found in
any case, unknown names and parameters refused in one line, padding by mask or by label -1,
float32 and float64 per call."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli import api  # noqa: E402
from ltr_cli.errors import LtrError  # noqa: E402
from ltr_cli.neural.losses import kinds, resolve  # noqa: E402
from ltr_cli.neural.losses.bridge import value_and_grad  # noqa: E402


def test_a_loss_is_found_by_its_name_an_alias_and_allranks_spelling():
    kind = resolve("listnet")
    assert resolve("list_net") is kind and resolve("listNet") is kind and resolve(" LISTNET ") is kind
    assert kind.allrank == "listNet"


def test_every_alias_is_declared_as_an_entry_point():
    from ltr_cli import plugins

    declared = set(plugins.declared("losses"))
    for kind in kinds().values():
        assert set(kind.names) <= declared, kind.name


def test_an_unknown_loss_is_one_line_listing_the_losses():
    with pytest.raises(LtrError) as err:
        resolve("listnett")
    msg = str(err.value)
    assert "\n" not in msg and "unknown loss 'listnett'" in msg and "listnet (list_net)" in msg


def test_an_unknown_or_missing_parameter_is_one_line():
    s, y = np.zeros((1, 3)), np.array([[1.0, 0.0, 2.0]])
    with pytest.raises(LtrError, match=r"^loss listnet: unknown parameter 'epsilon'; its parameters are eps$"):
        api.ranking_loss("listnet", s, y, epsilon=1e-3)


def test_bad_arrays_are_refused_in_one_line():
    with pytest.raises(LtrError, match="scores have shape"):
        api.ranking_loss("listnet", np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(LtrError, match="finite"):
        api.ranking_loss("listnet", np.array([[np.nan, 0.0]]), np.array([[1.0, 0.0]]))
    with pytest.raises(LtrError, match=">= 0"):
        api.ranking_loss("listnet", np.zeros((1, 2)), np.array([[1.0, -2.0]]))
    with pytest.raises(LtrError, match="mask must be a bool"):
        api.ranking_loss("listnet", np.zeros((1, 2)), np.zeros((1, 2)), mask=np.ones((1, 2)))


def test_label_minus_one_is_padding_without_a_mask_and_a_mask_overrides_it():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(2, 5))
    y = np.array([[2.0, 0.0, 1.0, -1.0, -1.0], [0.0, 1.0, 0.0, 3.0, -1.0]])
    mask = y != -1
    by_label = api.ranking_loss("listnet", s, y)
    by_mask = api.ranking_loss("listnet", s, np.where(mask, y, 7.0), mask=mask)
    assert by_label == pytest.approx(by_mask, abs=1e-15)
    one = api.ranking_loss("listnet", s[1], y[1])  # a 1-D slate
    assert one == pytest.approx(api.ranking_loss("listnet", s[1:], y[1:]), abs=1e-15)


def test_float64_input_is_computed_in_float64_and_float32_in_float32():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(3, 6))
    y = rng.integers(0, 3, size=(3, 6)).astype(float)
    v64, g64 = value_and_grad("listnet", s, y)
    v32, g32 = value_and_grad("listnet", s.astype(np.float32), y)
    assert g64.dtype == np.float64 and g32.dtype == np.float32
    assert abs(v64 - v32) < 1e-5 and abs(v64 - v32) > 0  # the same loss, at two precisions
    import jax

    assert not jax.config.jax_enable_x64  # the call's 64-bit mode did not leak


def test_importing_the_api_imports_no_jax():
    code = "import sys, ltr_cli.api, ltr_cli.neural.losses; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
