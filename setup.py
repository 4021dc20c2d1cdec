"""Build step of the package: compiles the kernels named in ``ltr_cli/kernels/ahead.py``
ahead of time into the extension ``ltr_cli.kernels._ahead`` (numba's ahead-of-time compiler,
see ``ltr_cli/kernels/ahead_build.py``). Everything else is declared in ``pyproject.toml``.

When the compile fails (no C compiler, say), the package installs without the extension and
its kernels compile on first use instead (``ltr kernels status`` says which)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

ROOT = Path(__file__).resolve().parent
AHEAD = "ltr_cli.kernels._ahead"
SIDECAR = "_ahead.json"


class BuildKernelsAhead(build_ext):
    """Builds the ahead-of-time kernels in a process of its own (numba's compiler settings stay
    out of the build's); skips the compile when the extension in place is fresh."""

    def build_extension(self, ext: Extension) -> None:
        if ext.name != AHEAD:
            super().build_extension(ext)
            return
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        in_place = ROOT / "ltr_cli" / "kernels" / target.name  # an earlier build in this checkout
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        try:
            # -P: the checkout comes from PYTHONPATH, never from whatever folder pip runs in
            subprocess.run([sys.executable, "-P", "-m", "ltr_cli.kernels.ahead_build", str(target), "--reuse",
                            str(in_place)], cwd=ROOT, env=env, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:  # optional: the install goes on without it
            raise CompileError(f"ltr-cli: the kernels were not compiled ahead ({exc}); they compile on first "
                               "use instead") from exc

    def copy_extensions_to_source(self) -> None:
        """An editable install: the extension and its sidecar (the digests of its sources)."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if ext.name == AHEAD:
                in_place, built = (Path(p) for p in self._get_inplace_equivalent(build_py, ext))
                sidecar = built.with_name(SIDECAR)
                if sidecar.is_file() and sidecar.resolve() != in_place.with_name(SIDECAR).resolve():
                    self.copy_file(str(sidecar), str(in_place.with_name(SIDECAR)), level=self.verbose)


setup(ext_modules=[Extension(AHEAD, sources=[], optional=True)], cmdclass={"build_ext": BuildKernelsAhead})
