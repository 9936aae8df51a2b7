"""What a user sees when things go wrong: runs each case through the real scripts and prints the table.

    .venv/bin/python -m tools.reliability --data_path=data [--work_dir=artifacts/reliability]

An acceptance check of the error conventions, and the source of the table in
docs/reference/errors.md (its rows are this script's output). Every case is a command a user
could type (tiny random BERT, synthetic data written under `--work_dir`); the table has the
case, the last line on stderr (or the line that matters on stdout), the exit code and the
seconds. Each case is a fresh process that imports TensorFlow and most train a tiny model, so
the whole takes minutes: too long for the test suite, where each behaviour is tested in process
(tests/common/training/test_runs.py, tests/common/training/test_method_contract.py, tests/common/data/test_files.py,
tests/test_scripts.py, ...). Cases that need a failure inside the process (a full disk during
publishing) are covered by tests (tests/common/training/test_runs.py, tests/common/test_artifacts.py),
named in the table's last rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import List, Tuple

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The script's flags, defined when it runs, not at import (as the bench modules' are)."""
    flags.DEFINE_string("work_dir", "artifacts/reliability", "Scratch directory (deleted and re-created).")
    flags.DEFINE_string("data_path", "data", "Data root with SentEval's downstream/STS (for the test_sts.py cases).")


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args: List[str], cwd: str, timeout: int = 600) -> Tuple[int, str, str, float]:
    began = time.time()
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": ROOT})
    return proc.returncode, proc.stdout, proc.stderr, time.time() - began


def _with(args: List[str], **settings) -> List[str]:
    """`args` with `--name=value` replaced or added (value None removes the flag)."""
    out = [a for a in args if not any(a.startswith(f"--{k}=") or a == f"--{k}" for k in settings)]
    return out + [f"--{k}={v}" for k, v in settings.items() if v is not None]


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def main(argv):
    del argv
    from common.data.synthetic import write_nli_jsonl, write_sentences

    work = os.path.abspath(FLAGS.work_dir)  # the cases run with it as their working directory
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    train, test_sts = os.path.join(ROOT, "train.py"), os.path.join(ROOT, "test_sts.py")
    sentences = write_sentences(os.path.join(work, "sentences.txt"))
    nli = write_nli_jsonl(os.path.join(work, "nli.jsonl"))
    art = os.path.join(work, "artifacts")
    tiny = ["--model=random_tiny", "--max_seq_len=16", "--batch_size=8", f"--artifacts_dir={art}",
            "--noeval_each_epoch"]
    simcse = [train, "--method=simcse", f"--train_data={sentences}", "--train_steps_per_epoch=2", "--train_epochs=1",
              *tiny]
    pause = [train, "--method=pause", f"--train_data={nli}", "--train_steps_per_epoch=2", "--train_epochs=1", *tiny]
    rows = []

    def case(name: str, args: List[str], show: str = "stderr") -> Tuple[int, str, str]:
        code, out, err, seconds = _run(args, work)
        line = _last(err) if show == "stderr" else _last(out)
        rows.append((name, line.replace(work, "<work>").replace("|", "\\|"), code, seconds))
        print(f"[{code}] {name}: {line}", flush=True)
        return code, out, err

    code, out, _ = case("a finished run", simcse, show="stdout")
    run_id = sorted(os.listdir(os.path.join(art, "model")))[-1]
    case("--model_dir that already exists (checked before training)",
         [*simcse, f"--model_dir={os.path.join(art, 'model', run_id)}"])
    extend = [train, f"--resume={run_id}", f"--artifacts_dir={art}", "--train_epochs=2"]
    case("--resume=<ID> --train_epochs=2 on a finished run: its model exists (checked before training)", extend)
    case("... the advice followed: --resume=<ID> alone (no --method), --train_epochs=2, --model_dir=<new>",
         [*extend, f"--model_dir={os.path.join(work, 'extended')}"], show="stdout")
    case("... and the printed next: command", [test_sts, f"--model={os.path.join(work, 'extended')}",
                                               f"--data_path={os.path.abspath(FLAGS.data_path)}",
                                               f"--artifacts_dir={art}"], show="stdout")
    case("--resume with a setting that cannot change (--batch_size)",
         [train, f"--resume={run_id}", f"--artifacts_dir={art}", "--batch_size=4"])
    case("--pos_sample_prec=0", [*pause, "--pos_sample_prec=0"])
    case("--train_lr=-1", [*pause, "--train_lr=-1"])
    case("--train_lr=nan", [*pause, "--train_lr=nan"])
    case("--model=<unknown spec>", _with(simcse, model="no-such-model"))
    case("--model=<run ID> for train.py (starts from that run's weights)", _with(simcse, model=run_id),
         show="stdout")
    case("missing --train_data", _with(pause, train_data=os.path.join(work, "missing.jsonl")))
    bad = os.path.join(work, "bad.txt")
    with open(bad, "wb") as f:
        f.write(b"a fine sentence\nan invalid byte \xff here\n")
    case("a non-UTF-8 byte in --train_data", _with(simcse, train_data=bad))
    odd = os.path.join(work, "odd.jsonl")
    with open(odd, "w", encoding="utf-8") as f:
        for i, line in enumerate(open(nli, encoding="utf-8")):
            row = json.loads(line)
            if i == 0:
                row["sentence1"] += " with\u2028a line separator, a\x0cform feed and\x85NEL"
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    case("U+2028, U+0085 and a form feed inside a JSONL sentence (trained on)",
         _with(pause, train_data=odd), show="stdout")
    case("a NaN loss (--train_lr=1e30)", _with(pause, artifacts_dir=os.path.join(work, "nan"), train_lr=1e30,
                                                train_steps_per_epoch=3))
    case("gs:// artifacts without network", _with(simcse, artifacts_dir="gs://no-such-bucket-reliability/a"))
    embedding = os.path.join(art, "model", run_id, "embedding")
    case("test_sts.py --model=<artifact path> (result named after its run ID)",
         [test_sts, f"--model={embedding}", f"--data_path={os.path.abspath(FLAGS.data_path)}",
          f"--artifacts_dir={art}"], show="stdout")
    case("test_sts.py --mode=cross on a bi-encoder", [test_sts, f"--model={run_id}", "--mode=cross",
                                                      f"--artifacts_dir={art}"])
    case("--verbose shows the traceback", [*pause, "--pos_sample_prec=0", "--verbose"])
    print()
    print("| case | what the user sees (last line) | exit code | seconds |")
    print("| --- | --- | --- | --- |")
    for name, line, code, seconds in rows:
        print(f"| {name} | `{line}` | {code} | {seconds:.0f} |")


if __name__ == "__main__":
    define_flags()
    cli.run(main)
