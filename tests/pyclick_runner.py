"""Drive PyClick (``markovi/PyClick``) on sessions given as JSON, for the opt-in comparison
of tests/test_clickfit_pyclick.py. Run as ``python pyclick_runner.py CHECKOUT`` with the job
on stdin: ``{"model", "iterations", "train": [[qid, [doc, ...], [click, ...]], ...], "test":
[...]}``; prints the fitted parameters and PyClick's log-likelihood and perplexity on both
parts as JSON. PyClick is imported from CHECKOUT (the directory holding ``pyclick/``)."""

from __future__ import annotations

import json
import sys


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from pyclick.click_models.CCM import CCM
    from pyclick.click_models.CM import CM
    from pyclick.click_models.DBN import DBN
    from pyclick.click_models.DCM import DCM
    from pyclick.click_models.Evaluation import LogLikelihood, Perplexity
    from pyclick.click_models.Inference import EMInference
    from pyclick.click_models.PBM import PBM
    from pyclick.click_models.SDBN import SDBN
    from pyclick.click_models.UBM import UBM
    from pyclick.search_session.SearchResult import SearchResult
    from pyclick.search_session.SearchSession import SearchSession

    job = json.load(sys.stdin)
    models = {"pbm": PBM, "cascade": CM, "ubm": UBM, "dcm": DCM, "ccm": CCM, "dbn": DBN, "sdbn": SDBN}
    model = models[job["model"]]()
    if isinstance(model._inference, EMInference):
        model._inference = EMInference(job["iterations"])

    def sessions(rows: list) -> list:
        out = []
        for qid, docs, clicks in rows:
            s = SearchSession(qid)
            s.web_results = [SearchResult(str(d), int(c)) for d, c in zip(docs, clicks)]
            out.append(s)
        return out

    train, test = sessions(job["train"]), sessions(job["test"])
    model.train(train)
    names = {p.name: c for p, c in model.params.items()}
    pairs = sorted({(s.query, r.id) for s in train + test for r in s.web_results})
    params: dict = {}
    for name, container in names.items():
        kind = type(container).__name__
        if kind == "QueryDocumentParamContainer":
            params[name] = [[q, int(d), container.get(q, d).value()] for q, d in pairs]
        elif kind == "RankParamContainer":
            params[name] = [container.get(r).value() for r in range(container.max_rank)]
        elif kind == "RankPrevClickParamContainer":
            params[name] = [[container.get(r, j).value() for j in range(container.max_rank)]
                            for r in range(container.max_rank)]
        else:
            params[name] = container.get().value()
    out = {"params": params}
    for part, rows in (("train", train), ("test", test)):
        if rows:
            ppl, per_rank = Perplexity().evaluate(model, rows)
            out[part] = {"log_likelihood": LogLikelihood().evaluate(model, rows), "perplexity": ppl,
                         "perplexity_per_rank": per_rank}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
