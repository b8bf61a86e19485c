"""The host's CPU steal, read from /proc/stat: what a lagged run's reason and `rig doctor` say."""

from __future__ import annotations

from rig.core.hostcpu import cpu_ticks, steal_share
from rig.ops.doctor import check_steal

STAT = "cpu  56982 1522 25681 221585 1131 0 2261 15671 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def test_steal_is_the_eighth_field_of_all_cpus_time():
    assert cpu_ticks(STAT) == (15671, 56982 + 1522 + 25681 + 221585 + 1131 + 0 + 2261 + 15671)
    later = "cpu  57982 1522 25681 222585 1131 0 2261 16671 0 0\n"
    assert steal_share(cpu_ticks(STAT), cpu_ticks(later)) == 1000 / 3000
    assert steal_share(cpu_ticks(STAT), cpu_ticks(STAT)) is None  # no time passed


def test_this_hosts_steal_and_the_doctors_line():
    stolen, total = cpu_ticks()
    assert 0 <= stolen <= total and total > 0
    check = check_steal()
    assert not check.required and "of this host's CPU time since boot" in check.detail
