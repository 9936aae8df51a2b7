"""PAUSE under MultiWorkerMirroredStrategy (the 1-vs-2-replica check of every method is in tests/test_methods.py)."""

import json
import os
import re
import subprocess
import sys

import pytest

from distributed_checks import ROOT


def _free_ports(n):
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# --publish_best: only the chief evaluates (STS-B dev), yet every worker must choose the same weights.
SELECTING = ["--eval_every=1", "--publish_best"]


@pytest.mark.parametrize("extra", [[], SELECTING], ids=["last_step", "publish_best"])
def test_two_process_multi_worker_run_ends_with_identical_weights(tmp_path, extra):
    from fixtures import write_senteval_snli, write_sts_root

    data = write_sts_root(str(tmp_path / "data"))
    write_senteval_snli(data, "dev", n=60)
    workers = [f"127.0.0.1:{p}" for p in _free_ports(2)]
    procs = []
    for index in range(2):
        env = {**os.environ, "PYTHONPATH": ROOT, "TF_CONFIG": json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})}
        args = [sys.executable, os.path.join(ROOT, "train.py"), "--model=random_tiny", "--train_data=senteval:dev",
                f"--data_path={data}", "--train_epochs=1", "--train_steps_per_epoch=3", "--batch_size=8",
                "--max_seq_len=16", "--strategy=multi_worker", "--checkpoint_every=2", "--log_every=1",
                "--noeval_each_epoch", f"--artifacts_dir={tmp_path / 'artifacts'}", *extra]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    fingerprints = [next(line for line in out.splitlines() if line.startswith("weights fingerprint:"))
                    for out, _ in outputs]
    assert fingerprints[0] == fingerprints[1]
    if extra:  # the non-chief, which never evaluates, chose the chief's step with the chief's score
        chosen = [next(line for line in out.splitlines() if line.startswith("published:")) for out, _ in outputs]
        assert chosen[0] == chosen[1] and "stsb_dev_spearman=" in chosen[0], chosen
        assert re.fullmatch(r"published: the weights of step \d, stsb_dev_spearman=\S+; "
                            r"last step 3: stsb_dev_spearman=-?[\d.]+(e-?\d+)?", chosen[0]), chosen[0]
    # Only the chief publishes a model; the other worker cleaned up after itself.
    assert "model:" in outputs[0][0] and "model:" not in outputs[1][0]
    assert len(os.listdir(tmp_path / "artifacts" / "model")) == 1
