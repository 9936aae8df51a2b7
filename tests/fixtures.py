"""Small data files in SentEval's layout, written by tests."""

from __future__ import annotations

import os

from common.sts import STS_SUBSETS

PAIRS = [
    ("a man is playing a guitar .", "a man plays the guitar .", "4.8"),
    ("a woman is slicing an onion .", "a man is dancing .", "0.2"),
    ("the cat sits on the mat .", "a cat is sitting on a mat .", "4.5"),
    ("stocks fell sharply on monday .", "the market dropped on monday .", "3.6"),
    ("a dog runs in the park .", "it is raining in london .", "0.0"),
    ("children play football outside .", "kids are playing soccer outdoors .", "4.4"),
]


def write_sts_root(root: str) -> str:
    """Writes every STS12-16 subset, STS-B dev/test and SICK test with 6 pairs each
    (one extra unscored pair per STS subset, as in STS15/16)."""
    for year, subsets in STS_SUBSETS.items():
        d = os.path.join(root, "downstream", "STS", f"{year.upper()}-en-test")
        os.makedirs(d, exist_ok=True)
        for name in subsets:
            with open(os.path.join(d, f"STS.input.{name}.txt"), "w") as f:
                f.writelines(f"{a}\t{b}\n" for a, b, _ in PAIRS)
                f.write("an unscored pair .\tnobody rated it .\n")
            with open(os.path.join(d, f"STS.gs.{name}.txt"), "w") as f:
                f.writelines(f"{s}\n" for _, _, s in PAIRS)
                f.write("\n")
    d = os.path.join(root, "downstream", "STS", "STSBenchmark")
    os.makedirs(d, exist_ok=True)
    for split in ("dev", "test"):
        with open(os.path.join(d, f"sts-{split}.csv"), "w") as f:
            f.writelines(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(PAIRS))
    d = os.path.join(root, "downstream", "SICK")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "SICK_test_annotated.txt"), "w") as f:
        f.write("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n")
        f.writelines(f"{i}\t{a}\t{b}\t{float(s) + 0.1:.1f}\tNEUTRAL\n" for i, (a, b, s) in enumerate(PAIRS))
    return root
