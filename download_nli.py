"""Downloads the official SNLI 1.0 and MultiNLI 1.0 training data (needs internet).

    python download_nli.py --out=<DATA_PATH>/nli [--datasets=snli,mnli]

The archives are MD5-checked before they are unpacked, into the layout that
`train.py --method=pause` (and SimCSE sup) read by default.
"""

from __future__ import annotations

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from common.data.download import ARCHIVES, download

flags.DEFINE_string("out", "data/nli", "Directory to unpack the archives into (<DATA_PATH>/nli).")
flags.DEFINE_list("datasets", sorted(ARCHIVES), f"Which archives: {', '.join(sorted(ARCHIVES))}.")
FLAGS = flags.FLAGS


def main(argv):
    for name, folder in download(FLAGS.datasets, FLAGS.out).items():
        print(f"{name}: {folder}")
    return 0


if __name__ == "__main__":
    cli.run(main)
