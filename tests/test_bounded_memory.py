"""The compiled block loop reads a mapped cache without holding it resident: the pages it
read are handed back as it goes, and the rounds are the same bytes."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data import paging
from ltr_cli.protocols import online_blocks

runner = CliRunner()
LIMIT = 256 << 10  # bytes read between hand-backs, for a cache of about 5 MB


def _mapped_rss(name: str = "X.bin") -> int:
    """Resident bytes of this process's maps of files called ``name`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            inside = len(fields) >= 6 and fields[-1].endswith("/" + name)
        elif inside and fields[:1] == ["Rss:"]:
            total += int(fields[1]) * 1024
    return total


def test_a_compiled_pass_over_a_mapped_cache_keeps_a_bounded_share_of_it_resident(tmp_path, monkeypatch):
    data = tmp_path / "mslr.txt"
    res = runner.invoke(app, ["data", "synth", str(data), "--like", "mslr-web10k", "--queries", "40"])
    assert res.exit_code == 0, res.output
    config = tmp_path / "run.yaml"
    config.write_text(f"experiment: mem\nseed: 0\n"
                      f"dataset: {{kind: files, features: 136, files: [{data}], storage: float64}}\n"
                      "protocol: {passes: 2}\n"
                      "metrics: {names: [ndcg@10], ties: input-order, no_relevant: one}\n"
                      "learners:\n  alg3: {type: alg3, mistake: ndcg@10}\n")
    first = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "ref"), "-q", "--kernels", "reference"])
    assert first.exit_code == 0, first.output
    monkeypatch.setattr(paging, "RELEASE_BYTES", LIMIT)
    resident: list[int] = []
    calls = online_blocks.BlockRunner._call

    def watched(self, unit, order, *args):
        calls(self, unit, order, *args)
        resident.append(_mapped_rss())

    monkeypatch.setattr(online_blocks.BlockRunner, "_call", watched)
    done = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "fast"), "-q", "--kernels", "compiled"])
    assert done.exit_code == 0, done.output
    (x_bin,) = (tmp_path / "fast" / ".cache").glob("*/X.bin")
    size = x_bin.stat().st_size
    offsets = np.fromfile(x_bin.with_name("offsets.bin"), dtype=np.int64)
    one_query = int(np.diff(offsets).max()) * 136 * 8  # a block holds at least one query, whatever its size
    assert max(resident) <= 2 * LIMIT + one_query + 4 * mmap.PAGESIZE, (max(resident), size)
    assert size > 8 * LIMIT and len(resident) > 4  # a cache many hand-backs long, read in many blocks
    (ref,) = (tmp_path / "ref" / "mem").glob("*/rounds.parquet")
    (fast,) = (tmp_path / "fast" / "mem").glob("*/rounds.parquet")
    assert ref.read_bytes() == fast.read_bytes()


def test_hand_backs_come_after_the_limit(monkeypatch):
    class Map:
        advised = 0

        def madvise(self, flag: int) -> None:
            assert flag == mmap.MADV_DONTNEED
            self.advised += 1

    mm = Map()
    pages = paging.MappedPages(mm, limit=100)  # type: ignore[arg-type]
    pages.read(60)
    assert mm.advised == 0
    pages.read(60)
    assert mm.advised == 1 and pages.releases == 1
    pages.read(99)
    assert mm.advised == 1
    assert np.isclose(pages.limit, 100)


def test_a_map_within_the_limit_is_never_handed_back():
    """All of a small map resident is within the bound: handing it back would only make
    the next pass fault every page in again."""
    class Map:
        advised = 0

        def __init__(self, size: int):
            self.size = size

        def __len__(self) -> int:
            return self.size

        def madvise(self, flag: int) -> None:
            self.advised += 1

    small, large = Map(100), Map(101)
    for mm in (small, large):
        pages = paging.MappedPages(mm, limit=100)  # type: ignore[arg-type]
        for _ in range(5):
            pages.read(100)  # five passes over the map
    assert small.advised == 0 and large.advised == 5
