"""The download path, against a local stand-in archive served through file:// URLs."""

import hashlib
import json
import pathlib
import zipfile

import pytest

from common.data.nli import read_nli
from common.data.download import Archive, download


def _stand_in(tmp_path):
    src = tmp_path / "src"
    (src / "snli_1.0").mkdir(parents=True)
    rows = [{"gold_label": "entailment", "sentence1": "a b", "sentence2": "a"},
            {"gold_label": "-", "sentence1": "c", "sentence2": "d"}]
    (src / "snli_1.0" / "snli_1.0_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    zip_path = tmp_path / "snli_1.0.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        z.write(src / "snli_1.0" / "snli_1.0_train.jsonl", "snli_1.0/snli_1.0_train.jsonl")
    md5 = hashlib.md5(zip_path.read_bytes()).hexdigest()
    return pathlib.Path(zip_path).as_uri(), md5


def test_download_verifies_and_unpacks(tmp_path):
    url, md5 = _stand_in(tmp_path)
    out = tmp_path / "data" / "nli"
    folders = download(["snli"], str(out), {"snli": Archive(url, md5, "snli_1.0")})
    pairs = read_nli(str(out / "snli_1.0" / "snli_1.0_train.jsonl"))
    # The pair without a gold label ("-") is kept, unlabelled.
    assert folders["snli"].endswith("snli_1.0") and len(pairs) == 2 and pairs.labels.tolist() == [0, -1]
    # A second call finds it and downloads nothing.
    assert download(["snli"], str(out), {"snli": Archive("file:///nonexistent.zip", md5, "snli_1.0")})


def test_bad_checksum_unpacks_nothing(tmp_path):
    url, _ = _stand_in(tmp_path)
    out = tmp_path / "nli"
    with pytest.raises(ValueError, match="does not match the published"):
        download(["snli"], str(out), {"snli": Archive(url, "0" * 32, "snli_1.0")})
    assert list(out.iterdir()) == []


def test_unreachable_url_says_where_to_put_the_files(tmp_path):
    with pytest.raises(ConnectionError, match=r"unzip it into .*nli.*senteval:train"):
        download(["snli"], str(tmp_path / "nli"), {"snli": Archive("file:///nonexistent/snli.zip", "x", "snli_1.0")})
    with pytest.raises(ValueError, match="Unknown dataset"):
        download(["qnli"], str(tmp_path))
