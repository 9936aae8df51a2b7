"""What every script shares: a quiet TensorFlow start-up and one clean exit for user errors.

Import this module before anything that imports TensorFlow (it loads it quietly: `common.quiet`),
and start the script with `cli.run(main)` instead of `app.run(main)`.

A user error (`common.errors.UserError`, a command line absl cannot parse or `app.UsageError`,
a file the user named that is missing or unreadable, a `gs://` or network failure, an artifact
that could not be written) ends the script as one line on stderr and exit code 2. Anything else
is a defect of the toolkit, a plain `ValueError` included: its traceback is shown and the exit
code is 1.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from absl import app, flags

from common import quiet  # sets TF_CPP_MIN_LOG_LEVEL before anything loads TensorFlow

VERBOSE_REQUESTED = quiet.VERBOSE_REQUESTED

if not VERBOSE_REQUESTED:
    quiet.load_tensorflow()

from common.errors import UserError  # noqa: E402

# Errors a user causes and can fix: a flag value, a setting, the data (UserError), a path the user
# gave that is missing or unreadable, the network. A plain ValueError is not among them: it is a defect.
USER_ERRORS = (UserError, FileNotFoundError, NotADirectoryError, PermissionError, ConnectionError)

flags.DEFINE_bool("verbose", False, "Show the traceback of a user error, and TensorFlow's own log messages.")


def _io_errors():
    import tensorflow as tf

    from common.artifacts import ArtifactWriteError

    # gs:// and other file-system failures (no network, no such bucket, no permission), and
    # an artifact that could not be written (disk full, read-only destination). A gs:// request
    # that still fails after TensorFlow's retries (a refused or unreachable connection) ends as
    # AbortedError("All 10 retry attempts failed. The last failure: ...").
    return (ArtifactWriteError, tf.errors.NotFoundError, tf.errors.PermissionDeniedError,
            tf.errors.FailedPreconditionError, tf.errors.UnavailableError, tf.errors.UnauthenticatedError,
            tf.errors.DeadlineExceededError, tf.errors.AbortedError)


def _parse_flags(argv):
    """absl's flag parsing, where an unknown or malformed flag ends as one line on stderr and exit code 2
    (absl itself prints two lines and exits with 1)."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        sys.stderr.write(f"{os.path.basename(argv[0])}: {' '.join(str(e).split())}; --helpshort lists the "
                         "flags and their defaults.\n")
        sys.exit(2)


def run(main: Callable) -> None:
    """`app.run(main)`, where stray arguments (anything but flags) and a user error (a flag absl cannot
    parse and an `app.UsageError` included) end as one line on stderr and exit code 2. Any other
    exception propagates: Python prints its traceback and the exit code is 1."""

    def wrapped(argv):
        if len(argv) > 1:
            # Every input of every script is a flag: a stray word is a typo or a missing "--name=".
            sys.stderr.write(f"{os.path.basename(sys.argv[0])}: Unexpected arguments: {argv[1:]}; every input is a "
                             "flag (--name=value), --helpshort lists them.\n")
            return 2
        if not flags.FLAGS.verbose:
            import tensorflow as tf

            tf.get_logger().setLevel("ERROR")
        try:
            return main(argv)
        except app.UsageError as e:
            # The command line itself (stray arguments): absl would print the whole usage text and exit
            # with 1. It has no traceback worth showing, so --verbose changes nothing here.
            sys.stderr.write(f"{os.path.basename(sys.argv[0])}: {' '.join(str(e).split())}\n")
            return 2
        except USER_ERRORS + _io_errors() as e:
            if flags.FLAGS.verbose:
                raise
            message = getattr(e, "message", None) or str(e)
            sys.stderr.write(f"{os.path.basename(sys.argv[0])}: {' '.join(message.split())} "
                             "(--verbose shows the traceback)\n")
            return 2

    app.run(wrapped, flags_parser=_parse_flags)
