"""Keeps secrets (SIM Ki/OPc, WiFi PSKs, InfluxDB tokens, passwords) out of exported datasets.

Two layers: keys with a secret's name are stripped from every document that goes into an
export, and the values they held (plus the sink's credentials from the environment) are then
searched for in everything written; a value found anywhere refuses the export.
"""

from __future__ import annotations

import os
import re

# Exact key names (compared lower-case, '-' read as '_').
SECRET_KEYS = {"ki", "opc", "op", "k", "psk", "wpa_psk", "wpa_passphrase", "passphrase", "sae_password",
               "password", "passwd", "token", "secret", "api_key", "apikey", "private_key",
               "vault_password"}
SECRET_SUFFIXES = ("_password", "_passwd", "_token", "_secret", "_psk", "_passphrase", "_private_key")
ENV_SECRETS = ("RIG_INFLUX_TOKEN", "RIG_INFLUX_PASSWORD")
MIN_SECRET_LEN = 6  # shorter values would match by accident in ordinary text


def is_secret_key(key: object) -> bool:
    k = str(key).lower().replace("-", "_")
    return k in SECRET_KEYS or k.endswith(SECRET_SUFFIXES)


def strip_secrets(doc: object, path: str = "") -> tuple[object, list[str], set[str]]:
    """(doc without secret keys, dotted paths removed, the removed string values)."""
    removed: list[str] = []
    values: set[str] = set()

    def walk(node: object, where: str) -> object:
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                here = f"{where}.{k}" if where else str(k)
                if is_secret_key(k):
                    removed.append(here)
                    values.update(_strings(v))
                else:
                    out[k] = walk(v, here)
            return out
        if isinstance(node, list):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(node)]
        return node

    return walk(doc, path), removed, values


def _strings(node: object) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_strings(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node)) if node else set()
    return {str(node)} if node is not None and len(str(node)) >= MIN_SECRET_LEN else set()


def env_secret_values() -> set[str]:
    return {v for k in ENV_SECRETS if len(v := os.environ.get(k, "")) >= MIN_SECRET_LEN}


def find_secret(text: str, values: set[str]) -> bool:
    if not values:
        return False
    return re.search("|".join(re.escape(v) for v in sorted(values)), text) is not None
