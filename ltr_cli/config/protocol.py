"""The ``protocol:`` block of an experiment config: how queries become rounds and what each
round reveals (labels, top-K labels or a simulated user's clicks, ``clicks:``). Checks that
tie several keys together are :meth:`ProtocolSpec.check`, called by the experiment config
(its ValueError names the key)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ltr_cli.core.schema import Strict
from ltr_cli.measures.metrics import parse_cutoff


class ClicksSpec(Strict):
    """``protocol.clicks``: the simulated user of ``protocol.feedback: clicks``."""

    model: str | dict[str, Any] = Field(
        description="a named click model (the click models of ltr list, the choices of ltr clicks --model) or a "
        "custom table {click: [...], stop: [...]} (docs/clicks.md)")
    stop: str | None = Field(
        None, description="the stop rule of a model that takes one (a cascade's: after-click, the textbook "
        "cascade and the default, or any-position, the reference code's)")
    shown: int = Field(10, gt=0, description="documents shown to the user each round (the top of the learner's list)")
    eta: float | None = Field(None, ge=0, description="the examination exponent of a model that takes one (pbm, "
                              "ultra-pbm, ...: ltr list; default 1)")
    grades: int | None = Field(None, gt=1, description="the named table's grades (2, 3 or 5; default: follow the "
                               "data's largest label: 0..1 binary, 0..2 three, 0..4 five)")
    gamma: float = Field(0.9995, gt=0, le=1, description="discount of the summary's discounted_cumulative: "
                         "sum over rounds t of gamma^(t-1) x the round's metric")

    def check(self) -> None:
        """The model against its settings (a cascade takes ``stop``, an examining model
        ``eta``; a custom table's probabilities): ValueError naming the key."""
        from ltr_cli.clicks.spec import build_model, named_with, takes_eta, takes_stop
        from ltr_cli.errors import LtrError

        model = self.model
        kind = model if isinstance(model, str) else model.get("type", "cascade")
        try:
            if not takes_eta(model) and self.eta is not None and takes_stop(model):
                raise ValueError(f"protocol.clicks.eta: applies to {named_with('eta')} only; {kind} is a "
                                 "cascade (set protocol.clicks.stop instead)")
            if takes_eta(model) and self.stop is not None:
                raise ValueError(f"protocol.clicks.stop: applies to the cascade models only; {kind} takes "
                                 "protocol.clicks.eta")
        except LtrError as exc:
            raise ValueError(str(exc)) from None
        try:
            build_model(model, self.grades, self.stop, self.eta, where="protocol.clicks.model",
                        hint="protocol.clicks.grades", keys=("protocol.clicks.stop", "protocol.clicks.eta"))
        except LtrError as exc:
            raise ValueError(str(exc)) from None


SAMPLING_PASS_KEYS = ("passes", "shuffle", "keep_probability", "drop_last_query")


class ProtocolSpec(Strict):
    passes: int = Field(1, gt=0, description="passes over the data files (each query once per pass)")
    feedback: str = Field(
        "auto", description="auto (each learner what it needs) | full | top-K: labels revealed after each round | "
        "clicks: the clicks of a simulated user on the shown list (protocol.clicks)")
    sampling: Literal["passes", "uniform"] = Field(
        "passes", description="passes: the data's queries in order, pass after pass | uniform: each round a "
        "training query drawn uniformly with replacement (needs max_rounds)")
    shuffle: bool = Field(False, description="shuffle queries within each file, every pass")
    keep_probability: float = Field(1.0, gt=0, le=1, description="keep each query of each pass with this "
                                    "probability (the authors' Yahoo and Yandex code: 0.8)")
    drop_last_query: bool = Field(
        False, description="never use the last query of each file in each pass (the authors' "
        "MATLAB loop processes a query only when the next qid starts)")
    max_rounds: int | None = Field(None, gt=0, description="stop after this many rounds (null: the whole stream)")
    clicks: ClicksSpec | None = Field(None, description="feedback: clicks: the click model and what the user is shown")
    log_regret: bool = Field(
        False, description="learners with a surrogate on a ball (rtopkf, ogd and listnet with a radius): log "
        "each round's surrogate at the learner's scores and the cumulative regret against the best fixed "
        "weights in hindsight (columns surrogate and regret; the run takes the round-by-round path)")
    checkpoint_every: int = Field(
        10_000, ge=0, description="save a resumable checkpoint every N rounds (0: never); a save costs "
        "about a millisecond whatever the round, 10,000 compiled rounds of MSLR-sized queries about 0.2 s")

    @field_validator("feedback")
    @classmethod
    def _feedback(cls, v: str) -> str:
        if v in ("auto", "full", "clicks"):
            return v
        head, _, k = v.partition("-")
        if head == "top" and parse_cutoff(k) is not None:
            return v
        raise ValueError("expected auto, full, clicks or top-K with K a positive integer in ASCII digits "
                         "(e.g. top-1)")

    def check(self) -> None:
        """The keys that go together: ``feedback: clicks`` and ``clicks:``; ``sampling:
        uniform`` with ``max_rounds`` and without the passes' keys. ValueError naming the key."""
        if self.feedback == "clicks" and self.clicks is None:
            raise ValueError("protocol.clicks: missing; protocol.feedback: clicks needs the click model, e.g. "
                             "clicks: {model: navigational} (docs/clicks.md)")
        if self.clicks is not None and self.feedback != "clicks":
            raise ValueError(f"protocol.clicks: is set but protocol.feedback is {self.feedback}; set feedback: "
                             "clicks, or remove the clicks: block")
        if self.clicks is not None:
            self.clicks.check()
        if self.sampling == "uniform":
            if self.max_rounds is None:
                raise ValueError("protocol.max_rounds: missing; sampling: uniform draws queries with replacement "
                                 "without end, so it needs max_rounds")
            given = [key for key in SAMPLING_PASS_KEYS if key in self.model_fields_set]
            if given:
                raise ValueError(f"protocol.{given[0]}: applies to sampling: passes; sampling: uniform draws each "
                                 f"round's query from the whole data (remove {given[0]})")

    def feedback_k(self) -> int | None:
        """K of ``top-K`` feedback, None for ``auto`` / ``full`` / ``clicks``."""
        return int(self.feedback.split("-")[1]) if self.feedback.startswith("top-") else None
