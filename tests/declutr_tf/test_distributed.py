"""DeCLUTR's loss (NT-Xent with gathered negatives + MLM) is the global-batch loss."""

from distributed_checks import assert_replicas_agree, replica_check


def test_one_replica_equals_two_replicas():
    assert_replicas_agree(replica_check("declutr"))
