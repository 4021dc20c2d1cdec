"""Speed-up of `ltr sweep --jobs 2` over `--jobs 1` on an 8-run sweep, measured side by
side in one run (prints JSON). Usage: python scripts/bench_sweep.py [queries]"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """
experiment: bench_sweep
dataset: {{kind: separable, variant: paper, queries: {queries}}}
metrics: {{names: [ndcg@10]}}
learners:
  slam: {{type: slam-perceptron}}
sweep:
  learners.slam.step.eta: [0.01, 0.1, 1.0, 10.0]
  seed: [0, 1]
"""


def main() -> None:
    queries = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "bench.yaml"
        cfg.write_text(CONFIG.format(queries=queries))
        times = {}
        for jobs in (1, 2):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ltr_cli", "sweep", str(cfg), "--out",
                            str(Path(tmp) / f"j{jobs}"), "--jobs", str(jobs)], check=True,
                           capture_output=True)
            times[jobs] = time.perf_counter() - start
    print(json.dumps({"runs": 8, "queries_per_run": queries, "seconds_jobs1": round(times[1], 2),
                      "seconds_jobs2": round(times[2], 2), "speedup": round(times[1] / times[2], 2)}))


if __name__ == "__main__":
    main()
