"""Trains sentence encoders (PAUSE, DeCLUTR, SimCSE). Not implemented yet.

    python train.py --method=pause ...
"""

from __future__ import annotations

import sys

from absl import app, flags

METHODS = ("pause", "declutr", "simcse")
flags.DEFINE_enum("method", "pause", METHODS, "Training method.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    sys.stderr.write(f"train.py --method={FLAGS.method}: not implemented yet; no model was trained.\n")
    return 2


if __name__ == "__main__":
    app.run(main)
