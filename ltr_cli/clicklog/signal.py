"""The training signal of a batch learner: a click log instead of the labels.

A batch learner's ``clicks:`` block says where each fold's clicks come from and how they
are corrected for position bias::

    clicks:
      generate: {model: ultra-pbm, eta: 1.0, sessions: 100000}   # or  log: DIR
      correction: ips            # an estimator: naive | ips | position-bias (lambdamart) |
                                 # pairwise-debias (ranksvm) | per document (neural):
                                 # policy-aware | affine | dm | dr | a plugin's
      propensity: true           # true | estimated | regression-em | logged | FILE (ips only)
      clip: 10

``generate`` simulates each fold's log inside the run, exactly as ``ltr clicks log``
writes it; ``log`` reads the logs ``ltr clicks log`` wrote (``DIR/fold<N>.parquet``; a
dataset without folds: ``DIR/log.parquet``). Each fold trains on the log of its own training
queries; the grid is still chosen on the vali labels and the test numbers are the test
labels', under the run's convention.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ltr_cli.clicklog.estimators import ESTIMATORS, estimator
from ltr_cli.core.schema import LaxPath, Strict


class GenerateSpec(Strict):
    """How a fold's click log is simulated: a logging ranker (RankSVM on a fraction of the
    fold's training queries) shows lists under ``policy``, a click model clicks on them."""

    model: Any = Field("ultra-pbm", description="click model: a name of ltr clicks --model (the click models of "
                       "ltr list) or a custom table {click: [...], stop: [...]}")
    eta: float | None = Field(None, ge=0, description="the position-bias exponent of a model that takes one "
                              "(default 1)")
    stop: str | None = Field(None, description="the stop rule of a model that takes one (a cascade's)")
    grades: int | None = Field(None, description="the named click table's grades (2, 3 or 5; default 5)")
    sessions: int = Field(10_000, ge=1, le=100_000_000, description="sessions in the fold's log, each on a "
                          "training query drawn uniformly with replacement")
    shown: int = Field(10, ge=1, le=1000, description="documents shown per session")
    policy: Literal["ranking", "shuffle", "swap", "plackett-luce"] = Field(
        "ranking", description="logging policy: the logging ranker's top documents; shuffled; top one swapped; "
        "or a Plackett-Luce draw from the softmax of its scores")
    logger_fraction: float = Field(0.01, gt=0, le=1, description="the share of the fold's training queries the "
                                   "logging RankSVM is fitted on (at least one query)")
    logger_C: float = Field(1.0, gt=0, description="the logging RankSVM's C")
    seed: int = Field(0, ge=0, description="seed of the logging ranker's queries and of the sessions")
    estimate_sessions: int | None = Field(
        None, ge=1, le=100_000_000, description="propensity: estimated: sessions of the shuffled log the "
        "propensities are estimated from (default: sessions)")

    @model_validator(mode="after")
    def _model(self) -> GenerateSpec:
        """The click model against its settings (a stop rule, eta, a custom table)."""
        from ltr_cli.clicks.spec import build_model
        from ltr_cli.errors import LtrError

        try:
            build_model(self.model, self.grades, self.stop, self.eta, where="model", hint="grades",
                        keys=("stop", "eta"))
        except LtrError as exc:
            raise ValueError(str(exc)) from None
        return self


class RegressionEMSpec(Strict):
    """``propensity: regression-em``'s settings (:mod:`ltr_cli.clicklog.rem`)."""

    relevance: Literal["gbdt", "logistic"] = Field(
        "gbdt", description="the relevance regression on the features: gbdt (LightGBM, the paper's) or logistic")
    iterations: int = Field(100, ge=1, le=10_000, description="EM iterations at most (it stops earlier when no "
                            "propensity moves by more than 1e-4)")
    trees: int = Field(30, ge=1, le=10_000, description="gbdt: trees of each refit")


class PairDebiasSpec(Strict):
    """``correction: pairwise-debias``'s settings (:mod:`ltr_cli.learners.batch.pair_debias`)."""

    rounds: int = Field(5, ge=1, le=100, description="alternations of the ranker's fit and the closed-form "
                        "update of the position biases t+ and t-")
    p: float = Field(1.0, ge=0, le=100, description="the regularisation power: t = (loss ratio)^(1/(p + 1))")


#: the propensities ``clicks.propensity`` names by a word (anything else is a file)
NAMED = ("estimated", "regression-em", "logged")
#: the estimators that take ``propensity: logged`` (a weight or an exposure per shown row)
LOGGED = ("ips", "policy-aware", "dm", "dr")
#: why the others do not: ``correction`` -> the reason and the fix
NOT_LOGGED = {
    "naive": "naive clicks weigh 1 and read no propensity; use correction: ips",
    "position-bias": "LightGBM's position-bias model learns its own position biases from the clicks; use "
                     "correction: ips",
    "pairwise-debias": "pairwise debiasing estimates its biases t+ and t- per position pair with the ranker; use "
                       "correction: ips",
    "affine": "a logged propensity is the row's examination, with no trust-bias beta (affine with beta 0 is "
              "policy-aware); use correction: policy-aware, dr or ips",
}


def logged_refusal(correction: str) -> str | None:
    """Why ``propensity: logged`` cannot go with ``correction`` (one line naming the keys
    and the fix), None when it can."""
    if correction in LOGGED:
        return None
    why = NOT_LOGGED.get(correction, "it weighs clicks per position (a plugin's estimator); use correction: ips "
                                     "or policy-aware")
    return f"clicks.propensity: logged gives one propensity per shown row, which correction {correction} cannot " \
           f"use: {why}"


class ClickSignal(Strict):
    """Train on clicks: each fold's log (simulated or read), corrected by ``correction``."""

    #: keys added after runs were first written, and their defaults: a run id leaves a key
    #: out while it has its default, so earlier runs keep their ids
    id_defaults: ClassVar[dict[str, Any]] = {"pairs": "unclicked", "propensity_draw": False, "em": None,
                                             "debias": None}

    log: LaxPath | None = Field(None, description="a folder of click logs written by ltr clicks log "
                                "(fold<N>.parquet per fold)")
    generate: GenerateSpec | None = Field(None, description="simulate each fold's log (the settings of ltr clicks log)")
    correction: str = Field(
        "ips", description="the estimator that corrects the clicks for position bias (ltr list: estimators)",
        json_schema_extra={"registry": "estimators"})
    propensity: bool | str = Field(True, description="ips and the per-document estimators: true (the click "
                                   "model's examination, and trust bias's beta), estimated (result randomisation on "
                                   "a shuffled log of the same queries), regression-em (ips: EM on the training log "
                                   "itself, relevance regressed on the features), logged (ips, policy-aware, dm, dr: the "
                                   "propensity column clicks.log was imported with, one per shown row: a click at "
                                   "row r weighs min(1/p_r, clip)), or a file (JSON of ltr clicks propensity --json, "
                                   "a list, or {alpha: [...], beta: [...]})")
    em: RegressionEMSpec | None = Field(None, description="propensity: regression-em: its settings (default: "
                                        "gbdt relevance, 100 iterations)")
    debias: PairDebiasSpec | None = Field(None, description="correction: pairwise-debias: its settings (default: "
                                          "5 rounds, p 1)")
    clip: float | None = Field(10.0, gt=0, description="ips: the largest weight 1/p_k; per document: the largest "
                               "1/E[alpha_d] (null: no clipping)")
    propensity_draw: bool = Field(
        False, description="ips with one propensity estimate (a file with its stderr, or estimated from a log "
        "read from clicks.log): train on propensities drawn once per log and fold from the estimate's error "
        "(log-normal, sd stderr_k), so that results repeated over logs count the estimate's error")
    pairs: Literal["unclicked", "query"] = Field(
        "unclicked", description="RankSVM's pairs: each click against the shown documents its session did not "
        "click, or against every other document of the query (query: Joachims et al. 2017's propensity-weighted "
        "rank of the clicked documents)")
    select: Literal["labels", "clicks"] = Field(
        "labels", description="choose the grid point on the vali labels (cv.select_by), or on clicks: the "
        "estimate of DCG@10 from a log of the vali queries simulated like the training log (weighted as the "
        "correction weighs clicks; generate only)")

    @field_validator("correction")
    @classmethod
    def _correction(cls, v: str) -> str:
        if v not in ESTIMATORS.names() or v not in ESTIMATORS:
            raise ValueError(f"unknown estimator {v!r}; the estimators are {', '.join(ESTIMATORS)}")
        return v

    @field_validator("propensity")
    @classmethod
    def _propensity(cls, v: bool | str) -> bool | str:
        if v is False:
            raise ValueError("propensity: give true, estimated, regression-em, logged or a file of propensities")
        if isinstance(v, str) and v not in NAMED:
            import os
            import stat

            try:
                mode = os.stat(v).st_mode
            except OSError:
                return v  # a missing file is said when the run reads it
            if not stat.S_ISREG(mode):  # a FIFO would wait, a device never end: refused before anything runs
                raise ValueError(f"propensity: {v} is not a regular file (a directory, device or FIFO); give a "
                                 "JSON file of ltr clicks propensity --json")
        return v

    @model_validator(mode="after")
    def _source(self) -> ClickSignal:
        if (self.log is None) == (self.generate is None):
            raise ValueError("give exactly one of log (a folder of ltr clicks log) or generate (simulate it)")
        if self.propensity_draw and self.propensity is True:
            raise ValueError("propensity_draw: true propensities have no error to draw from; give propensity: "
                             "estimated, or a file of ltr clicks propensity --json (with its stderr)")
        if self.propensity_draw and self.propensity == "estimated" and self.generate is not None:
            raise ValueError("propensity_draw: each simulated log already estimates its own propensities from its "
                             "own shuffled log, so a sweep over clicks.generate.seed carries the estimate's error; "
                             "drop propensity_draw (it is for one estimate: a file, or a log read from clicks.log)")
        if self.propensity == "logged":
            if self.generate is not None:
                raise ValueError("propensity: logged reads the propensity column of an imported log (clicks.log); "
                                 "clicks.generate simulates its log, whose propensities are the click model's: give "
                                 "propensity: true")
            if self.propensity_draw:
                raise ValueError("propensity_draw: logged propensities come with no standard error to draw from; "
                                 "drop propensity_draw")
            refused = logged_refusal(self.correction)
            if refused is not None:
                raise ValueError(refused)
        if self.select == "clicks" and self.generate is None:
            raise ValueError("select: clicks simulates a log of the vali queries: it needs generate, not log")
        if self.em is not None and self.propensity != "regression-em":
            raise ValueError("em: sets propensity: regression-em; give it, or drop em")
        pairwise = estimator(self.correction).pairwise
        if self.debias is not None and not pairwise:
            raise ValueError(f"debias: sets a pairwise correction (pairwise-debias); correction is {self.correction}")
        if pairwise and self.pairs != "unclicked":
            raise ValueError(f"correction: {self.correction} weighs each pair by the positions of both its documents; "
                             "pairs: query compares unshown documents too: use pairs: unclicked")
        return self

    def propensity_file(self) -> Path | None:
        v = self.propensity
        return Path(v) if isinstance(v, str) and v not in NAMED else None

    def describe(self) -> str:
        how = estimator(self.correction).label
        if estimator(self.correction).weighs:
            p = self.propensity
            how += (" (true propensities" if p is True else " (estimated propensities" if p == "estimated"
                    else " (propensities by regression EM" if p == "regression-em"
                    else " (the log's own propensities, per row" if p == "logged"
                    else f" (propensities of {p}") + (f", clipped at {self.clip:g})" if self.clip else ")")
        return how
