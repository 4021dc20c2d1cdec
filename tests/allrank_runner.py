"""Runs allRank's own loss functions (torch) on the cases tests/test_neural_allrank.py writes;
run as a script by a Python that has torch, with allRank's checkout on the path:

    python tests/allrank_runner.py ALLRANK_DIR CASES.npz MANIFEST.json OUT.npz

Each case: ``pred`` [N, B, L(, n)] and ``true`` [N, B, L] (-1 = padding), allRank's function,
its kwargs, ``sigmoid`` (apply it to the predictions first: allRank's bce and ordinal take
probabilities) and the dtype. Writes each batch's value and its gradient w.r.t. ``pred``, or
the one-line error allRank raised. allRank's data and model modules import packages the
losses do not need (sklearn, torchvision, gcsfs): the two names the losses take from them are
provided instead. torch 2 checks that BCELoss targets lie in [0, 1], which rejects allRank's
-1 padding; with ``unchecked_bce`` torch's formula (logs cut at -100) is used without it.
"""

from __future__ import annotations

import json
import sys
import types


def main(allrank_dir: str, cases_path: str, manifest_path: str, out_path: str) -> None:
    import numpy as np
    import torch

    sys.path.insert(0, allrank_dir)
    loading = types.ModuleType("allrank.data.dataset_loading")
    loading.PADDED_Y_VALUE = -1  # type: ignore[attr-defined]
    utils = types.ModuleType("allrank.models.model_utils")
    utils.get_torch_device = lambda: torch.device("cpu")  # type: ignore[attr-defined]
    sys.modules["allrank.data.dataset_loading"] = loading
    sys.modules["allrank.models.model_utils"] = utils
    import allrank.models.losses as losses

    class UncheckedBCELoss(torch.nn.Module):
        def __init__(self, reduction: str = "none"):
            super().__init__()

        def forward(self, p, t):
            return -(t * torch.clamp(torch.log(p), min=-100) + (1 - t) * torch.clamp(torch.log(1 - p), min=-100))

    cases = np.load(cases_path)
    out, errors = {}, {}
    for case in json.load(open(manifest_path)):
        cid = case["id"]
        for module in ("bce", "ordinal"):  # the package's function names shadow these modules
            sys.modules[f"allrank.models.losses.{module}"].BCELoss = (
                UncheckedBCELoss if case["unchecked_bce"] else torch.nn.BCELoss)
        fn = getattr(losses, case["fn"])
        dt = torch.float64 if case["dtype"] == "float64" else torch.float32
        values, grads = [], []
        try:
            for pred, true in zip(cases[f"pred_{cid}"], cases[f"true_{cid}"]):
                x = torch.tensor(pred, dtype=dt, requires_grad=True)
                v = fn(torch.sigmoid(x) if case["sigmoid"] else x, torch.tensor(true, dtype=dt), **case["kwargs"])
                if v.requires_grad:  # NeuralNDCG returns a constant when no slate has a relevant document
                    v.backward()
                values.append(float(v.detach()))
                grads.append(np.zeros_like(pred) if x.grad is None else x.grad.numpy().copy())
        except Exception as exc:  # noqa: BLE001 - allRank refusing an input is a result (float64 NeuralNDCG)
            errors[str(cid)] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            continue
        out[f"value_{cid}"], out[f"grad_{cid}"] = np.array(values), np.stack(grads)
    np.savez(out_path, **out)
    with open(out_path + ".errors.json", "w") as fh:
        json.dump(errors, fh)


if __name__ == "__main__":
    main(*sys.argv[1:5])
