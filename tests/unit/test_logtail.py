"""A JSON-lines log read as it grows (nodes/agent/rig_node/jsonltail.py): each row parsed once, a partial last
line left for later, a log written anew read from its start, old rows let go."""

import json
import os

from rig_node.jsonltail import JsonlTail


def _append(path, *rows, end="\n"):
    with open(path, "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows[:-1]) + json.dumps(rows[-1]) + end)


def test_rows_are_read_as_the_log_grows(tmp_path):
    log = tmp_path / "radio.lag.jsonl"
    tail = JsonlTail(log)
    assert tail.rows() == []  # not written yet
    _append(log, {"t": 1}, {"t": 2})
    assert [r["t"] for r in tail.rows()] == [1, 2]
    with open(log, "a") as f:
        f.write('{"t": 3, "p99')  # the emulator is writing this line
    assert [r["t"] for r in tail.rows()] == [1, 2]
    with open(log, "a") as f:
        f.write('_ms": 0.2}\nnot json\n')
    assert tail.rows()[-1] == {"t": 3, "p99_ms": 0.2}  # a line that is not JSON is skipped
    assert len(tail.rows()) == 3


def test_a_log_written_anew_is_read_from_its_start(tmp_path):
    log = tmp_path / "radio.stats.jsonl"
    tail = JsonlTail(log)
    _append(log, {"t": 1}, {"t": 2}, {"t": 3})
    assert len(tail.rows()) == 3
    os.unlink(log)  # the emulator restarted: its logs begin again
    assert tail.rows() == []
    _append(log, {"t": 10})
    assert [r["t"] for r in tail.rows()] == [10]


def test_rows_long_before_the_window_asked_for_are_let_go(tmp_path):
    log = tmp_path / "radio.lag.jsonl"
    tail = JsonlTail(log, keep_s=5)
    _append(log, *({"t": t} for t in range(20)))
    assert [r["t"] for r in tail.since(18)] == list(range(13, 20))
    _append(log, {"t": 20})
    assert [r["t"] for r in tail.since(10)] == list(range(13, 21))  # what was let go stays gone
