"""A run's lines for its user: printed plainly where a script asks, logged elsewhere."""

import logging

from common import notices


def test_a_notice_is_a_plain_stdout_line_for_scripts_and_an_info_record_elsewhere(capsys, caplog):
    with caplog.at_level(logging.INFO, logger="absl"):
        notices.notice("data: 3 labelled")
        assert capsys.readouterr().out == "" and [r.levelname for r in caplog.records] == ["INFO"]
        caplog.clear()
        notices.to_stdout()
        try:
            notices.notice("data: 3 labelled")
        finally:
            notices.to_stdout(False)
        assert capsys.readouterr().out == "data: 3 labelled\n" and not caplog.records
