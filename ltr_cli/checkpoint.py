"""Checkpoints of an online run, so ``ltr run --resume`` continues a killed run exactly.

A checkpoint holds everything that decides the rest of the run: the learner object (its
weights, schedule state and own random generator), the tie-breaking generator's state,
the number of rounds consumed and the rounds recorded so far. The query stream is not
stored: it is rebuilt from its seed and the consumed rounds are skipped, which replays
the stream's own random draws (shuffling, keep-probability) exactly.

Files are written to a temporary name and renamed, so a kill leaves either the previous
checkpoint or the new one, never half of one. They live beside the run directory as
``.<run-id>.checkpoint`` and are deleted when the run completes.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1


@dataclass
class RunState:
    run_id: str
    t: int
    columns: dict[str, list[Any]]
    learner: Any
    tie_rng_state: dict[str, Any]
    wall_seconds: float
    nonfinite_round: int | None = None  # first round after which the weights were NaN/inf


class Checkpointer:
    """Saves a :class:`RunState` every ``every`` rounds to ``path`` (atomically)."""

    def __init__(self, path: Path, run_id: str, every: int):
        self.path = Path(path)
        self.run_id = run_id
        self.every = every

    def due(self, t: int) -> bool:
        return self.every > 0 and t % self.every == 0

    def save(self, state: RunState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}")
        with open(tmp, "wb") as fh:
            pickle.dump({"format": FORMAT, "state": state}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def load(self) -> RunState | None:
        """The saved state of this run, or None (absent, another run's, or unreadable)."""
        try:
            with open(self.path, "rb") as fh:
                payload = pickle.load(fh)  # noqa: S301 - written by this tool, next to its results
        except FileNotFoundError:
            return None
        except Exception:  # a damaged checkpoint is ignored, the run starts over
            return None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            return None
        state = payload.get("state")
        if not isinstance(state, RunState) or state.run_id != self.run_id:
            return None
        return state

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
