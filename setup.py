"""Builds the Cython hot paths.

Every ``_name.pyx`` under ``fluss_fast/`` becomes an extension module next to its pure-Python twin
``name.py``. Two ways in, two policies:

* ``pip install`` (a wheel or an editable install): when the extensions cannot be compiled the
  install still succeeds with the pure-Python twins only (slower, never broken), and says so on
  stderr and, because pip hides a successful build's output, on the terminal too.
* ``python setup.py build_ext --inplace`` (a developer rebuilding after editing a ``.pyx``): any
  failure, a missing Cython included, is an error, so that an old ``.so`` never keeps loading
  unnoticed.

``FLUSS_FAST_NO_EXTENSIONS`` follows the runtime's rule (``fluss_fast/codec/_select.py``, loaded
here by path so that the package and its dependencies need not be importable yet).
"""
import glob
import os
import runpy
import sys

import setuptools
from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
_rules = runpy.run_path(os.path.join(HERE, "fluss_fast", "codec", "_select.py"))
extensions_disabled = _rules["extensions_disabled"]

# Only a command line that names build_ext asked for the extensions explicitly.
STRICT = "build_ext" in sys.argv[1:]
MIN_SETUPTOOLS = 77
DEV_HINT = "install the build tools with: python -m pip install -e '.[dev]'"


def tell(message):
    """Print a build message where a user will see it, even under a quiet pip."""
    text = f"fluss_fast build: {message}\n"
    sys.stderr.write(text)
    sys.stderr.flush()
    if STRICT or sys.stderr.isatty():
        return
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(text)
    except OSError:
        pass


def fail(message):
    sys.stderr.write(f"fluss_fast build: ERROR: {message}\n")
    raise SystemExit(1)


# pyproject.toml states the license as an SPDX expression, which older setuptools reject with a
# schema dump; say what to do instead.
if int(setuptools.__version__.split(".")[0]) < MIN_SETUPTOOLS:
    fail(f"setuptools >= {MIN_SETUPTOOLS} is needed, found {setuptools.__version__}; "
         f"upgrade with: python -m pip install -U 'setuptools>={MIN_SETUPTOOLS}'")


class OptionalBuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        # the extensions compile independently of each other: one gcc per core (``-j`` overrides)
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        self.failed = []
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any toolchain failure means "use the twins"
            if not self.failed:  # else it is the in-place copy of a module that failed to build
                self._failed("the extensions", exc)
        if self.failed:
            names = ", ".join(self.failed)
            if STRICT:
                fail(f"could not compile {names}; fix the error above (stale builds of these modules "
                     f"would otherwise keep loading)")
            tell(f"WARNING: could not compile {names}; the pure-Python twins will be used (slower). "
                 f"`fluss-fast --version` lists what loaded.")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._failed(ext.name, exc)

    def _failed(self, name, exc):
        sys.stderr.write(f"fluss_fast build: cannot compile {name}: {exc}\n")
        self.failed.append(name)


# Extensions that call into system C libraries: module -> the libraries' names. Only the runtime
# libraries are needed (the prototypes are declared in the module's own header), and on Debian both
# come with apt itself; where one cannot be found the module is left out and its twin is used.
SYSTEM_LIBS = {"_ipcbody": ("zstd", "lz4")}


def system_link_args(module):
    """Linker arguments for ``module``'s system libraries, or None when one of them is missing."""
    from ctypes.util import find_library

    args = []
    for name in SYSTEM_LIBS.get(module, ()):
        found = find_library(name)
        if not found:
            return None
        # Linux reports a soname (``libzstd.so.1``): link it by file name, as the unversioned
        # ``libzstd.so`` only comes with the -dev package; elsewhere a full path links directly.
        args.append(found if os.path.isabs(found) else f"-l:{found}")
    return args


def extensions():
    if extensions_disabled():
        if STRICT:
            fail("FLUSS_FAST_NO_EXTENSIONS is set, so there is nothing to build; unset it (or set it to 0)")
        tell("FLUSS_FAST_NO_EXTENSIONS is set: building the pure-Python package only")
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        if STRICT:
            fail(f"Cython is not installed, so the extensions cannot be built; {DEV_HINT}")
        tell(f"WARNING: Cython is not installed; the pure-Python twins will be used (slower). {DEV_HINT}")
        return []
    sources = sorted(glob.glob("fluss_fast/**/_*.pyx", recursive=True))
    # The C headers sit with the code they serve, and a .pxd that declares one may be cimported from
    # any package: every header folder is on every extension's include path.
    header_dirs = sorted({os.path.dirname(h) for h in glob.glob("fluss_fast/**/*.h", recursive=True)})
    exts = []
    for src in sources:
        link = system_link_args(os.path.basename(src)[:-4])
        if link is None:
            needs = " and ".join(f"lib{n}" for n in SYSTEM_LIBS[os.path.basename(src)[:-4]])
            if STRICT:
                fail(f"{src} needs {needs}, not found on this system; install them (Debian: "
                     f"apt-get install libzstd1 liblz4-1)")
            tell(f"WARNING: {src} needs {needs} (not found); its pure-Python twin will be used")
            continue
        exts.append(Extension(
            src[:-4].replace(os.sep, "."),
            [src],
            include_dirs=header_dirs,
            extra_compile_args=["-O3", "-Wno-unused-function"],
            extra_link_args=link,
        ))
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
        nthreads=os.cpu_count() or 1,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
