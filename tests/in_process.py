"""A root script or a bench module run in this test's process, as `python <script> <args>` or `python -m
<module> <args>` would run it, without paying TensorFlow's start-up again: for the checks of what a
script refuses (exit code 2 and one line) and of its `--help*` text. Each script keeps one real
subprocess in the suite for its real entry point (tests/test_scripts.py and its own tests; a bench
module's is its `--helpxml` run by tests/bench/test_modules.py).

The script runs as `__main__` through its own entry (`cli.run(main)` for the absl scripts), with
sys.argv, the working directory, stdout and stderr as a subprocess would see them; the lines it logs
are on its stderr as absl writes them on the console (its format, INFO and above by default). absl's flags are
global to the process: the script's flags are defined afresh for each run and removed after it (absl's
flagsaver deletes the flags a run added and restores every other flag's value), so no flag value leaks
between tests; `parsed_flags` does the same for a module's functions that read its flags.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import runpy
import subprocess
import sys
import traceback
import warnings

from absl import app, flags
from absl import logging as absl_logging
from absl.testing import flagsaver

from common import cli  # noqa: F401  defines --verbose and loads TensorFlow quietly, as every script does
from common import notices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(script: str, args: list, cwd: str) -> subprocess.CompletedProcess:
    """Runs `python <ROOT>/<script> <args>` in this process, in `cwd`.

    Args:
        script: str. A script at the repository root, e.g. "train.py".
        args: list. Its command-line arguments.
        cwd: str. The working directory of the run.

    Returns:
        subprocess.CompletedProcess with the exit code, stdout and stderr. An exception that escapes
        the script gives exit code 1 and its traceback on stderr, as the interpreter does.
    """
    path = os.path.join(ROOT, script)
    return _run([path, *args], lambda: runpy.run_path(path, run_name="__main__"), cwd)


def run_module(module: str, args: list, cwd: str = ROOT) -> subprocess.CompletedProcess:
    """Runs `python -m <module> <args>` in this process, in `cwd` (as `run_script`).

    Args:
        module: str. A module run as a script, e.g. "bench.ablation".
        args: list. Its command-line arguments.
        cwd: str. The working directory of the run. Defaults to the repository root.

    Returns:
        subprocess.CompletedProcess, as `run_script`'s.
    """
    def run():
        # runpy puts the module's file in sys.argv[0], as `python -m` does. A test that imported the module
        # keeps its copy: the run executes a fresh one as __main__, which runpy warns about needlessly here.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".* found in sys.modules after import of package",
                                    category=RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)

    return _run(["-m", *args], run, cwd)


@contextlib.contextmanager
def parsed_flags(define_flags, args: list):
    """A module's flags defined by `define_flags()` and `args` parsed, as in a process that runs it, for
    the code inside the block (a bench module's functions that read its flags); on exit the flags it
    defined are removed and every other flag's value is restored, as after `run_module`.

    Args:
        define_flags: callable. The module's `define_flags`.
        args: list. Its command-line arguments, e.g. ["--percentages=5"].
    """
    was_parsed = flags.FLAGS.is_parsed()
    with flagsaver.flagsaver():
        try:
            define_flags()
            flags.FLAGS(["python", *args])
            yield flags.FLAGS
        finally:
            if not was_parsed:
                flags.FLAGS.unparse_flags()


def _run(argv: list, run, cwd: str) -> subprocess.CompletedProcess:
    old_cwd = os.getcwd()
    stdout, stderr = io.StringIO(), io.StringIO()
    tf_logger = logging.getLogger("tensorflow")
    tf_level, was_parsed = tf_logger.level, flags.FLAGS.is_parsed()
    # absl's one-time start-up (its logging handler on the root logger, help flags) would change this
    # process for the tests that follow; the help flags are defined once here instead, before the save.
    app.define_help_flags()
    init_done, app._run_init.done = app._run_init.done, True
    # A script's `to_stdout()` is its process's choice; the tests that follow log their notices again.
    printing = notices.to_stdout(False)
    # The lines a script logs reach its stderr as absl's handler writes them on the console: its format, at
    # the verbosity of a script's parsed flags (INFO by default; absl's before a parse is WARNING).
    console = logging.StreamHandler(stderr)
    console.setFormatter(absl_logging.PythonFormatter())
    root = logging.getLogger()
    root_level, verbosity = root.level, absl_logging.get_verbosity()
    root.addHandler(console)
    root.setLevel(logging.INFO)
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with flagsaver.flagsaver(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            old_argv, sys.argv = sys.argv, list(argv)
            os.chdir(cwd)
            try:
                run()
                code = 0
            except SystemExit as e:
                code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
                if not isinstance(e.code, (int, type(None))):
                    sys.stderr.write(f"{e.code}\n")
            except BaseException:  # noqa: BLE001  the interpreter prints any exception and exits with 1
                sys.stderr.write(traceback.format_exc())
                code = 1
            finally:
                root.removeHandler(console)  # before the harness's own lines (unparse_flags logs one)
                sys.argv = old_argv
                os.chdir(old_cwd)
                if not was_parsed:
                    flags.FLAGS.unparse_flags()
    finally:
        root.removeHandler(console)
        root.setLevel(root_level)
        absl_logging.set_verbosity(verbosity)
        app._run_init.done = init_done
        tf_logger.setLevel(tf_level)
        notices.to_stdout(printing)
    return subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())
