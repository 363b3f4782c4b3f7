"""Builds the Cython hot paths.

Every ``_name.pyx`` under ``fluss_fast/`` becomes an extension module next to its pure-Python twin
``name.py``. When no compiler (or no Cython) is available the build still succeeds and installs the
twins only, the way aiokafka falls back: the library is then slower, never broken.
"""
import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any toolchain failure means "use the twins"
            self._warn(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._warn(exc, ext.name)

    @staticmethod
    def _warn(exc, name="extensions"):
        sys.stderr.write(f"WARNING: could not build {name} ({exc}); the pure-Python twins will be used\n")


def extensions():
    if os.environ.get("FLUSS_FAST_NO_EXTENSIONS"):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        return []
    sources = sorted(glob.glob("fluss_fast/**/_*.pyx", recursive=True))
    exts = [
        Extension(
            src[:-4].replace(os.sep, "."),
            [src],
            extra_compile_args=["-O3", "-Wno-unused-function"],
        )
        for src in sources
    ]
    return cythonize(
        exts,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
        quiet=True,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
