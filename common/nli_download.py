"""Downloads the official SNLI 1.0 and MultiNLI 1.0 archives (needs internet).

    python -m common.nli_download --out=<DATA_PATH>/nli [--datasets=snli,mnli]

Writes `<out>/snli_1.0/snli_1.0_train.jsonl` etc. (the archives' own layout),
which is where `train.py`'s default `--train_data` looks. Each archive is
checked against its published MD5 before it is unpacked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from typing import Dict, Sequence

from absl import app, flags, logging
from tqdm.auto import tqdm


@dataclasses.dataclass(frozen=True)
class Archive:
    url: str
    md5: str
    folder: str  # top-level folder inside the zip


ARCHIVES: Dict[str, Archive] = {
    "snli": Archive("https://nlp.stanford.edu/projects/snli/snli_1.0.zip", "981c3df556bbaea3f17f752456d0088c",
                    "snli_1.0"),
    "mnli": Archive("https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip", "0f70aaf66293b3c088a864891db51353",
                    "multinli_1.0"),
}


def _md5(path: str) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download_archive(name: str, archive: Archive, out_dir: str, progress: bool = True) -> str:
    """Downloads, verifies and unpacks one archive into `out_dir`; returns its folder.

    Raises:
        ConnectionError: when the URL cannot be reached, saying where to put the files.
        ValueError: when the checksum does not match.
    """
    target = os.path.join(out_dir, archive.folder)
    if os.path.isdir(target):
        logging.info("%s already present in %s", name, target)
        return target
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        zip_path = os.path.join(tmp, os.path.basename(archive.url))
        try:
            with urllib.request.urlopen(archive.url, timeout=60) as response, open(zip_path, "wb") as f:
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=name, disable=not progress) as bar:
                    for chunk in iter(lambda: response.read(1 << 20), b""):
                        f.write(chunk)
                        bar.update(len(chunk))
        except (urllib.error.URLError, OSError) as e:
            raise ConnectionError(
                f"Could not download {archive.url} ({e}). Without internet, download it elsewhere and unzip "
                f"it into {out_dir} (so that {target}/ exists), or train on SentEval's SNLI files with "
                "--train_data=senteval:train (see README.md, section 'Data')."
            ) from None
        digest = _md5(zip_path)
        if digest != archive.md5:
            raise ValueError(f"{archive.url}: MD5 {digest} does not match the published {archive.md5}; "
                             "the download is corrupt or the file changed. Nothing was unpacked.")
        unpack = os.path.join(tmp, "unpacked")
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(unpack)
        if not os.path.isdir(os.path.join(unpack, archive.folder)):
            raise ValueError(f"{archive.url}: the archive has no {archive.folder}/ folder.")
        shutil.move(os.path.join(unpack, archive.folder), target)  # complete, or not there at all
    return target


def download(names: Sequence[str], out_dir: str, archives: Dict[str, Archive] = ARCHIVES) -> Dict[str, str]:
    unknown = [n for n in names if n not in archives]
    if unknown:
        raise ValueError(f"Unknown dataset(s) {unknown}; expected some of {sorted(archives)}.")
    return {n: download_archive(n, archives[n], out_dir) for n in names}


FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    for name, folder in download(FLAGS.datasets, FLAGS.out).items():
        print(f"{name}: {folder}")


if __name__ == "__main__":
    flags.DEFINE_string("out", "data/nli", "Directory to unpack the archives into (<DATA_PATH>/nli).")
    flags.DEFINE_list("datasets", ["snli", "mnli"], "Which archives: snli, mnli.")
    app.run(main)
