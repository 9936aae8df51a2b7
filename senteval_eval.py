"""SentEval transfer and probing tasks. Not implemented yet.

    python senteval_eval.py --model=<ID|path|spec> --data_path=...
"""

from __future__ import annotations

import sys

from absl import app


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    sys.stderr.write("senteval_eval.py: not implemented yet; no evaluation was run.\n")
    return 2


if __name__ == "__main__":
    app.run(main)
