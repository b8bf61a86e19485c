"""Where the InfluxDB sink writes, and with which credentials.

Read from the environment first, then from a TOML file. Secrets are pydantic SecretStr so that
no repr, log line or error message ever shows them.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from rig.core.errors import InputError

ENV_PREFIX = "RIG_INFLUX_"
CONFIG_FILES = (Path.home() / ".config/rig/influx.toml", Path("/etc/rig/influx.toml"))


class InfluxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    db: str = "rig"
    user: str | None = None
    password: SecretStr | None = None
    token: SecretStr | None = None
    batch_lines: int = Field(default=50_000, ge=1)
    gzip: bool = False
    writers: int = Field(default=2, ge=1, le=16)
    timeout_s: float = 10.0

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s):// URL")
        if parts.username or parts.password:
            raise ValueError("must not carry credentials; use user/password or token")
        return v.rstrip("/")

    @property
    def destination(self) -> str:
        """Names the server and database (no credentials), as recorded in the sync markers."""
        return f"{self.url}/{self.db}"


def _file_path() -> Path | None:
    explicit = os.environ.get(ENV_PREFIX + "CONFIG")
    if explicit:
        return Path(explicit)
    return next((p for p in CONFIG_FILES if p.is_file()), None)


def load_config() -> InfluxConfig | None:
    """The sink's settings, or None when no InfluxDB is configured (the sink is optional)."""
    values: dict = {}
    path = _file_path()
    source = "environment"
    if path is not None:
        source = str(path)
        try:
            values.update(tomllib.loads(path.read_text()).get("influx", {}))
        except OSError as e:
            raise InputError(str(path), "-", f"cannot read: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise InputError(str(path), "-", f"not valid TOML: {e}") from None
    for key in InfluxConfig.model_fields:
        env = os.environ.get(ENV_PREFIX + key.upper())
        if env:
            values[key] = env
    if not values.get("url"):
        return None
    try:
        return InfluxConfig(**values)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "-"
        if err["loc"] and os.environ.get(ENV_PREFIX + str(err["loc"][0]).upper()):  # the value came from there
            source, field = "environment", ENV_PREFIX + str(err["loc"][0]).upper()
        # input values are deliberately not echoed: they may be secrets
        raise InputError(source, field, err["msg"].removeprefix("Value error, ")) from None
