"""MPTCP sockets: a new one (stream_socket), and a connected socket's subflows as its own kernel
sees them: for an MPTCP socket each subflow's struct tcp_info (getsockopt SOL_MPTCP/MPTCP_TCPINFO)
and addresses (MPTCP_SUBFLOW_ADDRS); for a plain TCP socket (or any socket, with `mptcp=False`)
its TCP_INFO as the one "subflow". Also the addresses a connection announced (MPTCP_INFO).

Both MPTCP options take a struct mptcp_subflow_data header that the caller fills in (its own
size and the size of one element it wants), so they need a getsockopt whose buffer goes *in* as
well as out: Python's socket.getsockopt only passes a zeroed buffer, hence libc's via ctypes.
Offsets are those of include/uapi/linux/tcp.h (append-only; bytes_retrans, the last field read,
is in every kernel with MPTCP_TCPINFO, 5.16+).
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
from dataclasses import dataclass

IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
SOL_MPTCP = 284
MPTCP_INFO = 1
MPTCP_TCPINFO = 2
MPTCP_SUBFLOW_ADDRS = 3
TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_IS_MPTCP = 43  # include/uapi/linux/tcp.h

HEADER = struct.Struct("=IIII")  # struct mptcp_subflow_data: size_subflow_data, num_subflows, size_kernel, size_user
TCP_INFO_SIZE = 232  # struct tcp_info up to tcpi_rcv_wnd; the kernel copies min(this, its own size)
SOCKADDR_STORAGE = 128
ADDRS_SIZE = 2 * SOCKADDR_STORAGE  # struct mptcp_subflow_addrs: local, remote
CAPACITY = 8  # subflows room for in the first call; more => one call with room for all

# (field, offset, struct format) in struct tcp_info; times in microseconds, windows in segments.
FIELDS = (
    ("state", 0, "B"), ("ca_state", 1, "B"), ("rto_us", 8, "I"), ("snd_mss", 16, "I"), ("lost", 32, "I"),
    ("retrans", 36, "I"), ("rtt_us", 68, "I"), ("rttvar_us", 72, "I"), ("snd_ssthresh", 76, "I"),
    ("snd_cwnd", 80, "I"), ("total_retrans", 100, "I"), ("bytes_acked", 120, "Q"), ("bytes_received", 128, "Q"),
    ("delivered", 192, "I"), ("bytes_sent", 200, "Q"), ("bytes_retrans", 208, "Q"),
)
TCP_ESTABLISHED = 1
INFINITE_SSTHRESH = 0x7FFFFFFF  # snd_ssthresh before the first loss (slow start)


@dataclass(frozen=True)
class Subflow:
    """One subflow (or a plain TCP connection): addresses as "ip:port", counters cumulative."""
    local: str
    remote: str
    state: int  # TCP_ESTABLISHED = 1
    ca_state: int  # 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss
    rto_us: int
    snd_mss: int
    lost: int  # segments currently thought lost
    retrans: int  # segments currently retransmitted and unacknowledged
    rtt_us: int  # smoothed
    rttvar_us: int
    snd_ssthresh: int  # INFINITE_SSTHRESH until set
    snd_cwnd: int
    total_retrans: int  # segments retransmitted, cumulative
    bytes_acked: int
    bytes_received: int
    delivered: int  # segments delivered, cumulative
    bytes_sent: int  # including retransmissions
    bytes_retrans: int


class SubflowsChanged(OSError):
    """A subflow joined or left between the two reads, twice in a row."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.getsockopt.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
_libc.getsockopt.restype = ctypes.c_int


def _getsockopt(fd: int, level: int, name: int, buf: bytearray) -> int:
    """getsockopt with `buf` passed in and filled; returns the length the kernel wrote."""
    length = ctypes.c_uint32(len(buf))
    c_buf = (ctypes.c_char * len(buf)).from_buffer(buf)
    if _libc.getsockopt(fd, level, name, ctypes.addressof(c_buf), ctypes.byref(length)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return length.value


def _array(fd: int, name: int, size: int) -> tuple[int, int, bytes]:
    """One MPTCP subflow array: (number of subflows, element size used, elements)."""
    room = CAPACITY
    while True:
        buf = bytearray(HEADER.size + room * size)
        HEADER.pack_into(buf, 0, HEADER.size, 0, 0, size)
        _getsockopt(fd, SOL_MPTCP, name, buf)
        _, count, _, size_user = HEADER.unpack_from(buf, 0)
        if count <= room:  # else the kernel filled what fitted and counted all of them
            return count, size_user, bytes(buf[HEADER.size:HEADER.size + count * size_user])
        room = count


def _info(raw: bytes, offset: int, size: int) -> dict:
    return {name: struct.unpack_from("=" + fmt, raw, offset + at)[0] if at + struct.calcsize(fmt) <= size else 0
            for name, at, fmt in FIELDS}


def _address(raw: bytes, offset: int) -> str:
    family = struct.unpack_from("=H", raw, offset)[0]
    port = struct.unpack_from("!H", raw, offset + 2)[0]
    if family == socket.AF_INET:
        return f"{socket.inet_ntop(socket.AF_INET, raw[offset + 4:offset + 8])}:{port}"
    if family == socket.AF_INET6:
        return f"[{socket.inet_ntop(socket.AF_INET6, raw[offset + 8:offset + 24])}]:{port}"
    return f"family{family}:?"


def _name(addr: tuple) -> str:
    return f"[{addr[0]}]:{addr[1]}" if ":" in addr[0] else f"{addr[0]}:{addr[1]}"


def mptcp_subflows(sock: socket.socket) -> list[Subflow]:
    """The MPTCP socket's subflows, in the kernel's order. The two reads are not atomic: when the
    counts differ (a subflow joined or closed in between) they are read again, once."""
    fd = sock.fileno()
    for _ in range(2):
        n_info, size, infos = _array(fd, MPTCP_TCPINFO, TCP_INFO_SIZE)
        n_addr, asize, addrs = _array(fd, MPTCP_SUBFLOW_ADDRS, ADDRS_SIZE)
        if n_info == n_addr:
            return [Subflow(local=_address(addrs, i * asize), remote=_address(addrs, i * asize + SOCKADDR_STORAGE),
                            **_info(infos, i * size, size)) for i in range(n_info)]
    raise SubflowsChanged(f"subflows changed while read ({n_info} infos, {n_addr} addresses)")


def tcp_subflow(sock: socket.socket, names: tuple[str, str] | None = None) -> Subflow:
    """A plain TCP socket as one subflow (TCP_INFO on the socket itself). `names`: (local, remote)
    as read while connected; once both sides have closed the socket has no peer name any more."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_SIZE)
    local, remote = names or (_name(sock.getsockname()), _name(sock.getpeername()))
    return Subflow(local=local, remote=remote, **_info(raw, 0, len(raw)))


def subflows(sock: socket.socket, mptcp: bool = True, names: tuple[str, str] | None = None) -> list[Subflow]:
    """The subflows of an MPTCP socket (`mptcp`) or of a plain TCP one. An MPTCP socket that fell
    back to TCP (the peer does not speak MPTCP) answers SOL_MPTCP options with EOPNOTSUPP and
    passes TCP_INFO to its one subflow. `names`: see tcp_subflow."""
    if mptcp:
        try:
            return mptcp_subflows(sock)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOPROTOOPT):
                raise
    return [tcp_subflow(sock, names)]


def is_mptcp(sock: socket.socket) -> bool:
    """Whether the socket is MPTCP now: False for a plain TCP one, and for an MPTCP one that fell
    back to TCP (at the handshake or after it), whose options pass to its one TCP subflow."""
    return sock.getsockopt(socket.IPPROTO_TCP, TCP_IS_MPTCP) == 1


ADD_ADDR_SIGNAL_AT = 1  # struct mptcp_info (include/uapi/linux/mptcp.h): u8 mptcpi_add_addr_signal


def announced_addresses(sock: socket.socket) -> int | None:
    """How many addresses the connection's path manager announced to the peer (ADD_ADDR; each
    counted once however often it was sent), from MPTCP_INFO. None for a plain TCP socket or one
    that fell back to TCP."""
    try:
        raw = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 8)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.ENOPROTOOPT):
            return None
        raise
    return raw[ADD_ADDR_SIGNAL_AT]


def stream_socket(tcp: bool = False) -> socket.socket:
    """A new MPTCP stream socket (tcp: a plain TCP one)."""
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP if tcp else IPPROTO_MPTCP)
