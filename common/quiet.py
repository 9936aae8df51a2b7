"""TensorFlow loaded without its start-up lines, for the scripts (`common.cli`) and the Python API.

TensorFlow 2.21 writes its start-up lines (CUDA probing, CPU features, "All log messages before
absl::InitializeLog()") through C++ logging before TF_CPP_MIN_LOG_LEVEL applies; only the file
descriptor itself can hold them back. The CUDA driver probe of a machine without a GPU ("failed
call to cuInit: ... CUDA error") is logged at ERROR level when the devices are first listed. None
of them tells a CPU user anything to act on; `--verbose` (the scripts) keeps them.
Set TF_CPP_MIN_LOG_LEVEL yourself to choose another level.
"""

from __future__ import annotations

import os
import sys

STDERR_FD = 2  # what C++ writes to, in a terminal and under a notebook kernel alike
# A script run with --verbose shows TensorFlow's own lines (flags are parsed later, but TensorFlow
# loads as the toolkit's modules import).
VERBOSE_REQUESTED = any(arg in ("--verbose", "--verbose=true", "--verbose=True") for arg in sys.argv[1:])
# Read once, when TensorFlow's C++ core loads. 3 keeps out its ERROR lines too: on a CPU they say what
# is not so (the first ragged or integer op of a run logs "oneDNN supports DT_INT64 only on platforms
# with AVX-512" on CPUs that have AVX-512) or nothing to act on; a real failure is a Python exception.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if VERBOSE_REQUESTED else "3")


def load_tensorflow() -> None:
    """Imports TensorFlow and lists its physical devices with file descriptor 2 pointed at /dev/null.

    Listing the physical devices probes the platforms (CUDA included) without initialising the
    runtime: a MultiWorkerMirroredStrategy, which must come first, can still be created. Python
    errors still surface afterwards. Nothing happens when TensorFlow is already loaded.
    """
    if "tensorflow" in sys.modules:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        saved = os.dup(STDERR_FD)
    except OSError:  # no descriptor 2 at all
        saved = None
    devnull = os.open(os.devnull, os.O_WRONLY)
    if saved is not None:
        os.dup2(devnull, STDERR_FD)
    try:
        import tensorflow

        tensorflow.config.list_physical_devices()
    finally:
        if saved is not None:
            os.dup2(saved, STDERR_FD)
            os.close(saved)
        os.close(devnull)
