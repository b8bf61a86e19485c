"""The coupled CCs' window arithmetic (nodes/bpf/coupled_math.h, the code the BPF objects
run) against an independent float computation of the published formulas.

coupled_math.h is compiled as plain C into math_check; every state below is fed to it and
to the reference, per subflow. States: windows and smoothed RTTs recorded from the two
subflows of an MPTCP connection during the shared-bottleneck runs (ss -tin, sampled at the
same instant), plus hand-made edge cases (many paths, large windows, long fat paths, ties).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rig.congestion import BPF_DIR

ONE = 1 << 24

# (cwnd, rtt_us) of the two subflows of one MPTCP connection, recorded with ss -tin at the
# same instant during the shared-bottleneck runs (20 Mbit/s tbf; lia/olia/balia, with and
# without 0.5 % random loss).
RECORDED = [
    [(21, 46641), (38, 45311)],
    [(8, 65372), (6, 58564)],
    [(4, 45697), (11, 49129)],
    [(28, 41223), (15, 40778)],
    [(7, 44289), (17, 37971)],
    [(30, 55675), (6, 51730)],
    [(26, 44661), (22, 44124)],
    [(3, 24479), (13, 22630)],
    [(2, 33585), (26, 36484)],
    [(30, 30303), (2, 22435)],
    [(2, 40092), (91, 56022)],
]
# Hand-made: disjoint paths of different RTT, 3-4 paths, windows near the 2^20 clamp.
EDGE = [
    [(40, 10000), (12, 75000)],
    [(200, 20000), (35, 110000), (90, 40000)],
    [(1, 500), (800, 90000), (60, 12000), (300, 35000)],
    [(900000, 200000), (500000, 150000)],
    [(100, 1000), (2, 1000000)],  # rtt ratio 1000, nearly idle slow path: BALIA's alpha = 50000
    [(33, 7000)],
]
STATES = RECORDED + EDGE


def lia_ref(paths, i):
    """RFC 6356 sec. 3: per ACKed packet min(alpha/w_total, 1/w_i),
    alpha = w_total * max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2."""
    total = sum(w for w, _ in paths)
    alpha = total * max(w / r**2 for w, r in paths) / sum(w / r for w, r in paths) ** 2
    return min(alpha / total, 1 / paths[i][0])


def olia_ref(paths, ells, i):
    """Khalili et al. ToN 2013: (w_r/rtt_r^2)/(sum_p w_p/rtt_p)^2 + alpha_r/w_r;
    M = largest windows, B = largest ell/rtt^2; alpha = 1/(n|B\\M|) on B\\M,
    -1/(n|M|) on M if B\\M is non-empty, else 0."""
    n = len(paths)
    w_max = max(w for w, _ in paths)
    quality = [ell / r**2 for ell, (_, r) in zip(ells, paths)]
    m = {k for k, (w, _) in enumerate(paths) if w == w_max}
    b = {k for k, q in enumerate(quality) if q == max(quality)}
    collected = b - m
    alpha = 0.0
    if collected and i in collected:
        alpha = 1 / (n * len(collected))
    elif collected and i in m:
        alpha = -1 / (n * len(m))
    w, r = paths[i]
    return (w / r**2) / sum(wp / rp for wp, rp in paths) ** 2 + alpha / w


def balia_ref(paths, i):
    """Peng et al. ToN 2016: (x_r/rtt_r)/(sum_k x_k)^2 * (1+a_r)/2 * (4+a_r)/5, x = w/rtt,
    a_r = max_k x_k / x_r; on loss w_r - (w_r/2) * min(a_r, 1.5)."""
    x = [w / r for w, r in paths]
    a = max(x) / x[i]
    inc = (x[i] / paths[i][1]) / sum(x) ** 2 * (1 + a) / 2 * (4 + a) / 5
    w = paths[i][0]
    return inc, max(w - w / 2 * min(a, 1.5), 2)


@pytest.fixture(scope="module")
def math_check(tmp_path_factory) -> Path:
    if shutil.which("clang") is None or shutil.which("make") is None:
        pytest.skip("needs clang and make")
    build = tmp_path_factory.mktemp("bpf-build")
    subprocess.run(["make", "-s", "-C", str(BPF_DIR), f"BUILD={build}", f"{build}/math_check"], check=True)
    return build / "math_check"


def run_c(binary: Path, lines: list[str]) -> list[tuple[int, int]]:
    p = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return [tuple(int(v) for v in row.split()) for row in p.stdout.splitlines()]


def line(algo: str, paths, i: int, ells=None) -> str:
    ells = ells or [0] * len(paths)
    return f"{algo} {i} " + " ".join(f"{w} {r} {e}" for (w, r), e in zip(paths, ells))


def assert_close(got_q24: int, want: float, what: str) -> None:
    # Q24 fixed point, rtt ratios in Q16: a relative error of a few 1e-5 plus rounding.
    assert abs(got_q24 / ONE - want) <= 1e-3 * abs(want) + 4 / ONE, f"{what}: {got_q24 / ONE} != {want}"


def cases():
    return [(s, i) for s in STATES for i in range(len(s))]


def test_lia_increase_matches_rfc6356(math_check):
    got = run_c(math_check, [line("lia", s, i) for s, i in cases()])
    for (s, i), (inc, _) in zip(cases(), got):
        assert_close(inc, lia_ref(s, i), f"lia {s} path {i}")


def test_lia_is_reno_for_one_path_and_never_exceeds_it(math_check):
    got = run_c(math_check, [line("lia", s, i) for s, i in cases()])
    for (s, i), (inc, _) in zip(cases(), got):
        assert inc <= ONE // s[i][0]
        if len(s) == 1:
            assert inc == ONE // s[i][0]


# ell per path (bytes between losses): ties, a clear best path, the best path not the largest window.
ELLS = [[0, 0], [300000, 90000], [40000, 900000], [5000, 5000, 80000], [1, 2, 3, 4]]


def olia_cases():
    out = []
    for s in STATES:
        for ells in ELLS:
            if len(ells) == len(s):
                out += [(s, ells, i) for i in range(len(s))]
    return out


def test_olia_increase_matches_khalili(math_check):
    got = run_c(math_check, [line("olia", s, i, e) for s, e, i in olia_cases()])
    assert len(got) > 20
    signs = set()
    for (s, e, i), (inc, _) in zip(olia_cases(), got):
        want = olia_ref(s, e, i)
        assert_close(inc, want, f"olia {s} ell {e} path {i}")
        signs.add(want > 0)
    assert signs == {True, False}  # the cases do reach OLIA's decreasing branch


def test_balia_increase_and_decrease_match_peng(math_check):
    got = run_c(math_check, [line("balia", s, i) for s, i in cases()])
    for (s, i), (inc, ssthresh) in zip(cases(), got):
        want_inc, want_ssthresh = balia_ref(s, i)
        assert_close(inc, want_inc, f"balia {s} path {i}")
        # alpha is Q16 (when below 1.5): off by up to w/2^16 packets
        assert abs(ssthresh - want_ssthresh) <= 1 + s[i][0] / 65536, f"balia ssthresh {s} path {i}: {ssthresh} != {want_ssthresh}"
