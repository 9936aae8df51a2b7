import itertools

import numpy as np
import pytest

from common.data.sampling import StreamSampler, batches_dataset


def _take(it, n):
    return [b.copy() for b in itertools.islice(it, n)]


def test_resuming_at_step_k_continues_the_same_stream():
    sampler = StreamSampler([np.arange(0, 7), np.arange(100, 150)], [0.3, 0.7], batch_size=8, seed=5)
    full = _take(sampler.batches(), 30)
    resumed = _take(sampler.batches(start_step=17), 13)
    np.testing.assert_array_equal(np.stack(full[17:]), np.stack(resumed))
    again = _take(StreamSampler([np.arange(0, 7), np.arange(100, 150)], [0.3, 0.7], 8, 5).batches(), 30)
    np.testing.assert_array_equal(np.stack(full), np.stack(again))
    other = _take(StreamSampler([np.arange(0, 7), np.arange(100, 150)], [0.3, 0.7], 8, 6).batches(), 30)
    assert not np.array_equal(np.stack(full), np.stack(other))


def test_each_stream_is_a_permutation_per_pass():
    sampler = StreamSampler([np.arange(10)], [1.0], batch_size=5, seed=0)
    rows = np.concatenate(_take(sampler.batches(), 6))  # 3 passes over the 10 rows
    for p in range(3):
        assert sorted(rows[p * 10:(p + 1) * 10].tolist()) == list(range(10))
    assert rows[:10].tolist() != rows[10:20].tolist()


def test_stream_shares_follow_weights():
    sampler = StreamSampler([np.arange(0, 50), np.arange(50, 100)], [0.2, 0.8], batch_size=100, seed=1)
    rows = np.concatenate(_take(sampler.batches(), 50))
    assert (rows < 50).mean() == pytest.approx(0.2, abs=0.02)


def test_bad_weights_are_rejected():
    with pytest.raises(ValueError, match="has no rows"):
        StreamSampler([np.arange(3), np.arange(0)], [0.5, 0.5], 4, 0)
    with pytest.raises(ValueError, match="not all 0"):
        StreamSampler([np.arange(3)], [0.0], 4, 0)


def test_batches_dataset_gathers_columns():
    sampler = StreamSampler([np.arange(4)], [1.0], batch_size=3, seed=2)
    ds = batches_dataset(sampler, [["a", "b", "c", "d"], np.array([0.0, 1.0, 2.0, 3.0], np.float32)], start_step=1)
    text, value = next(iter(ds))
    idx = _take(sampler.batches(), 2)[1]
    assert [t.decode() for t in text.numpy()] == [["a", "b", "c", "d"][i] for i in idx]
    np.testing.assert_array_equal(value.numpy(), idx.astype(np.float32))
