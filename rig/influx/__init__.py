"""InfluxDB sink: run time series and summaries as line protocol, written exactly once per run."""

from rig.influx.sink import Sink, sink_from_env
from rig.influx.sync import SyncResult, sync

__all__ = ["Sink", "SyncResult", "sink_from_env", "sync"]
