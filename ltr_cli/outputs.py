"""Writing inside an output folder, and only there.

Every file the tool writes for ``ltr plot``, ``ltr report --out`` and ``ltr score --out``
goes through :func:`write_file`: the final path is resolved (following any symbolic link
already at that name) and must lie inside the resolved output folder; the content is
written to a new temporary file in that folder and renamed into place, so a failed write
leaves no half-written result and a symbolic link at the final name is replaced, never
written through. (Where a run folder goes is the runs layer's: ``runs/folder.py``.)

Names the tool makes up from a user's file name (temporaries, locks, cache folders) go
through :func:`short_name`, so that they fit the file system's limit on one name
(``NAME_MAX``, 255 bytes) whatever the length of the user's name.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from ltr_cli.errors import LtrError

# file names the tool makes up itself (experiment + metric + extension)
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}", re.ASCII)
NAME_MAX = 255  # bytes in one file name (Linux, macOS)
_TMP_STEM = 100  # bytes of a user's name kept in a temporary's name: room for ".<pid>.<hex>.tmp"


def short_name(name: str, limit: int) -> str:
    """``name`` as part of a name the tool makes up (a lock, a temporary, a cache folder):
    ``name`` itself while it takes at most ``limit`` bytes on disk, else its first
    characters and ``~`` and 16 hex digits of a hash of the whole name, ``limit`` bytes at
    most (so that two long names that share a beginning still get different names)."""
    raw = os.fsencode(name)
    if len(raw) <= limit:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    room = limit - len(digest) - 1
    kept, used = [], 0
    for ch in name:  # whole characters (a lone surrogate stands for one undecodable byte)
        width = len(os.fsencode(ch))
        if used + width > room:
            break
        kept.append(ch)
        used += width
    return "".join(kept) + "~" + digest


def output_path(out_dir: Path, name: str, own_name: bool = True) -> Path:
    """``out_dir / name`` (resolved) for a writer, or a one-line :class:`LtrError`.

    ``own_name``: the tool made ``name`` up from names it read (a plot's file name), so it
    must be a plain ASCII file name; otherwise (``--out FILE``) it only has to be one path
    component. Either way the resolved path must be inside the resolved ``out_dir``.
    """
    out_dir = Path(out_dir)
    if own_name and not _FILE_NAME.fullmatch(name):
        raise LtrError(f"{out_dir}: refusing to write {name!r}: not a plain file name "
                       "(ASCII letters, digits, '.', '_', '-')")
    if name in ("", ".", "..") or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise LtrError(f"{out_dir / name}: not a file name to write to; give a file path")
    if out_dir.is_symlink():  # e.g. a "plots" link planted in a received results folder
        raise LtrError(f"{out_dir}: the output folder is a symbolic link (to {out_dir.resolve()}); "
                       "refusing to write through it: remove the link or give a real folder")
    root = out_dir.resolve()
    target = root / name
    final = target.resolve()
    if not final.is_relative_to(root) or final == root:
        raise LtrError(f"{out_dir / name}: leads outside the output folder {out_dir} (to {final}); "
                       "refusing to write there: remove that link or choose another output folder")
    return target


def new_temporary(folder: Path, name: str) -> Path:
    """A new empty file in ``folder`` to be renamed to ``name`` there (created exclusively
    under a name no other writer takes, so never an existing link), with the permissions
    the umask gives a new file."""
    for _ in range(100):
        tmp = folder / f".{short_name(name, _TMP_STEM)}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise LtrError(f"{folder}: cannot create a temporary file to write {name}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's, or not a pid: leave its file alone
    return True


def remove_dead_temporaries(folder: Path, name: str) -> None:
    """Remove the temporaries :func:`new_temporary` left for ``name`` in ``folder`` when the
    process that wrote them was killed (its pid no longer runs); only regular files."""
    prefix = f".{short_name(name, _TMP_STEM)}."
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        rest = entry.name[len(prefix):] if entry.name.startswith(prefix) else ""
        parts = rest.split(".")
        if (len(parts) == 3 and parts[2] == "tmp" and parts[0].isdigit() and len(parts[1]) == 8
                and entry.is_file(follow_symlinks=False) and not _pid_alive(int(parts[0]))):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def replace_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically through a temporary created exclusively
    beside it (never through a link planted under a guessable name)."""
    tmp = new_temporary(path.parent, path.name)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_file(out_dir: Path, name: str, write: Callable[[Path], None], own_name: bool = True) -> Path:
    """Write ``out_dir/name`` atomically with ``write(temporary_path)``; return
    ``out_dir/name`` (as given, for messages)."""
    target = output_path(out_dir, name, own_name)
    remove_dead_temporaries(target.parent, name)  # a write that was killed (e.g. ltr plot)
    tmp = new_temporary(target.parent, name)
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Path(out_dir) / name


def write_text(path: Path, text: str) -> Path:
    """``--out FILE``: ``text`` to ``path`` inside its own folder, atomically."""
    path = Path(path)
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return write_file(path.parent, path.name, write, own_name=False)
