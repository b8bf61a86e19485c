"""Field checks for requests: a value that fails one is refused, never passed on or interpreted."""

from __future__ import annotations

import ipaddress
import re

# A Linux interface name (IFNAMSIZ - 1 characters): no '/', and never '.' or '..'.
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}\Z")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}\Z")
_CC = re.compile(r"[a-z][a-z0-9_]{0,15}\Z")


class Refused(Exception):
    """A request outside the agent's closed set, or a field that fails its check."""


def only(req: dict, allowed: set[str], what: str) -> None:
    extra = sorted(set(req) - allowed)
    if extra:
        raise Refused(f"{what}: unexpected field {extra[0]!r}")


def need(req: dict, name: str, what: str) -> object:
    if name not in req:
        raise Refused(f"{what}: missing field {name!r}")
    return req[name]


def ifname(value: object, where: str) -> str:
    if not isinstance(value, str) or not _IFNAME.match(value):
        raise Refused(f"{where}: {value!r} is not an interface name")
    return value


def key(value: object, where: str) -> str:
    if not isinstance(value, str) or not _KEY.match(value):
        raise Refused(f"{where}: {value!r} is not a key (letters, digits, '-', '_', at most 32)")
    return value


def cc_name(value: object, where: str) -> str:
    if not isinstance(value, str) or not _CC.match(value):
        raise Refused(f"{where}: {value!r} is not a congestion control name")
    return value


def ipv4(value: object, where: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))  # type: ignore[arg-type]
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise Refused(f"{where}: {value!r} is not an IPv4 address") from None


def destination(value: object, where: str) -> str:
    """A route's destination: 'default' or an IPv4 network in CIDR form."""
    if value == "default":
        return "default"
    try:
        return str(ipaddress.IPv4Network(value))  # type: ignore[arg-type]
    except (ipaddress.AddressValueError, ipaddress.NetmaskValueError, ValueError, TypeError):
        raise Refused(f"{where}: {value!r} is not 'default' or an IPv4 network") from None


def integer(value: object, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Refused(f"{where}: {value!r} is not a whole number in [{lo}, {hi}]")
    return value


def number(value: object, where: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise Refused(f"{where}: {value!r} is not a number in [{lo}, {hi}]")
    return float(value)


def boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise Refused(f"{where}: {value!r} is not true or false")
    return value


def one_of(value: object, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise Refused(f"{where}: {value!r} is not one of {', '.join(choices)}")
    return value  # type: ignore[return-value]


def listed(value: object, where: str, most: int) -> list:
    if not isinstance(value, list) or len(value) > most:
        raise Refused(f"{where}: not a list of at most {most}")
    return value


def mapping(value: object, where: str, most: int) -> dict:
    if not isinstance(value, dict) or len(value) > most:
        raise Refused(f"{where}: not a mapping of at most {most}")
    return value
