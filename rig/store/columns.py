"""The columns of runs.parquet, defined once: name, type, where the value comes from, meaning.

The writer's schema (RUNS_SCHEMA), the row of each (run, pair) (run_rows: for the writer and for
the InfluxDB sink from memory), the pair rows' MIB counters (rig.run.execute) and the export's
descriptions (rig.export.datapackage) are all made from RUNS. A new column is one entry here:

    source "params"  the run's parameter of that name (params.json; `default` when absent)
    source "status"  the run's status.json field of that name
    source "pair"    the pair's field of that name (pairs.json); with `mib`, rig.run.execute fills it
                     with how much the sender's MIB counter of that name moved during the run
    source "run"     run_id, campaign, campaign_id: what names the run
    source "subflows" the pair's field of that name, computed from the sender's subflow samples
                     by rig.store.path_stats (RTT and loss per path, the connection's RTT, the
                     subflows' bytes against what the receiver read)
"""

from __future__ import annotations

from dataclasses import dataclass
import pyarrow as pa

from rig.store import formats
from rig.store.path_stats import PATHS

TIME = pa.timestamp("us", tz="UTC")


# A run's (and a pair's) statuses, the one list of them: what a run's outcome can be, counted in
# the campaign's summary, the report, the export and the findings.
#   ok       completed and valid
#   invalid  completed, but not as configured (rig.run.judge)
#   stalled  its transfer made no progress for the stall bound (rig.run.watch): the network's
#            result, kept as recorded (never run again)
#   failed   did not complete (the network's, or a lost part of the rig's: run again by --resume)
STATUSES = ("ok", "invalid", "stalled", "failed")
STATUSES_WORST_FIRST = ("failed", "stalled", "invalid")  # a run is its worst pair's

@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    source: str  # run | params | status | pair | subflows
    description: str | None = None
    default: object = None  # params: the value of a run recorded before the parameter existed
    mib: str | None = None  # pair: the sender's MIB counter whose change during the run this is


RUNS: tuple[Column, ...] = (
    Column("run_id", pa.string(), "run", "run identifier (deterministic, from the campaign plan)"),
    Column("campaign", pa.string(), "run", "campaign name"),
    Column("campaign_id", pa.string(), "run"),
    Column("setup", pa.string(), "params", "receiver setup of seed 002: I (independent paths), II (LTE via the core to "
                                           "AP3), III (one shared WiFi bottleneck)"),
    Column("homing", pa.string(), "params", "sender interfaces used: dual, lte or wifi"),
    Column("cc", pa.string(), "params", "congestion control (cubic, lia, olia, balia, ...)"),
    Column("connections", pa.int32(), "params", "parallel MPTCP connections per sender"),
    Column("volume_bytes", pa.int64(), "params", "data volume per sender over all its connections, bytes"),
    Column("rcvbuf_bytes", pa.int64(), "params", "receiver buffer, bytes"),
    Column("wifi_standard", pa.string(), "params", "WiFi radio profile (g, a, n24, n5, ac)"),
    Column("repetition", pa.int32(), "params", "repetition index of this factor combination"),
    Column("pair", pa.int32(), "pair", "sender/receiver pair index"),
    Column("sender", pa.string(), "pair", "sending host"),
    Column("receiver", pa.string(), "pair", "receiving host"),
    Column("started_at", TIME, "pair", "the sender's start of the transfer (UTC, the sender's clock)"),
    Column("duration_s", pa.float64(), "pair", "volume runs: flow completion time of the pair (= fct_s); time-based "
                                               "runs: the configured duration, seconds"),
    Column("goodput_bps", pa.float64(), "pair", "volume runs: volume x 8 / flow completion time; time-based runs: bytes "
                                                "read within the duration x 8 / duration, bit/s (only for a complete "
                                                "transfer)"),
    Column("bytes_lte", pa.int64(), "pair", "bytes that left the sender's LTE interface during the run"),
    Column("bytes_wifi", pa.int64(), "pair", "bytes that left the sender's WiFi interface during the run"),
    Column("status", pa.string(), "pair", "ok, failed (did not complete), stalled (its transfer made no progress for "
                                          "the stall bound: a result of the network) or invalid (completed, failed "
                                          "validation)"),
    Column("reason", pa.string(), "pair", "why a run failed, stalled or is invalid"),
    Column("bytes_sent", pa.int64(), "pair"),
    Column("bytes_received", pa.int64(), "pair"),
    Column("retrans_segs", pa.int64(), "pair", mib="TcpRetransSegs"),
    Column("reinjections", pa.int64(), "pair", mib="MPTcpExtMPTCPRetrans"),
    Column("lag_retries", pa.int32(), "status", "earlier attempts of this run set aside because the emulator lagged "
                                                "(kept in the campaign's attempts/)"),
    Column("fct_s", pa.float64(), "pair", "flow completion time: the receiver's last byte read - the sender's start, "
                                          "seconds"),
    Column("first_byte_at", TIME, "pair", "when the receiver read the pair's first byte (the receiver's clock)"),
    Column("last_byte_at", TIME, "pair", "when the receiver read the pair's last byte (the receiver's clock)"),
    Column("backup", pa.string(), "params", "the path whose MPTCP endpoint was flagged backup at the start: none, wifi "
                                            "or lte", default="none"),
    Column("policy", pa.string(), "params", "the node-side path policy: none or loss-aware", default="none"),
    Column("subflows", pa.int32(), "pair", "the fewest MPTCP subflows established on any of the pair's connections"),
    Column("join_s", pa.float64(), "pair", "dual-homed runs: the longest any of the pair's connections took from its "
                                           "establishment until it had a subflow on each path, seconds"),
    Column("mp_join_syn_tx", pa.int64(), "pair", "MP_JOIN SYNs the sender sent during the run (MPTcpExtMPJoinSynTx)",
           mib="MPTcpExtMPJoinSynTx"),
    Column("mp_join_synack_rx", pa.int64(), "pair", "MP_JOIN SYN/ACKs the sender received during the run "
                                                    "(MPTcpExtMPJoinSynAckRx)", mib="MPTcpExtMPJoinSynAckRx"),
    Column("add_addr_rx", pa.int64(), "pair", "ADD_ADDRs the sender received during the run (MPTcpExtAddAddr)",
           mib="MPTcpExtAddAddr"),
    Column("add_addr_lost", pa.int64(), "pair", "connections of the pair with no subflow to an address the receiver "
                                                "announced on them: its ADD_ADDR (sent, and sent again while no echo "
                                                "came, until the connection ended) never reached the sender "
                                                "(rig.run.joins): the network's doing, the run stays a result"),
    Column("tcp_fallbacks", pa.int64(), "pair", "connections the sender's kernel sent on as plain TCP after their "
                                                "MP_CAPABLE SYNs went unanswered (MPTcpExtMPCapableSYNTXDrop): the "
                                                "network's doing, the run stays a result", mib="MPTcpExtMPCapableSYNTXDrop"),
    Column("data_fallbacks", pa.int64(), "pair", "connections the sender's kernel went on with as plain TCP after the "
                                                 "handshake, their packets carrying MP_CAPABLE (the third ACK, the "
                                                 "first data) lost (MPTcpExtMPCapableDataFallback; the receiver's "
                                                 "MPCapableFallbackACK accounts for each): the network's doing, the "
                                                 "run stays a result", mib="MPTcpExtMPCapableDataFallback"),
    Column("mptcp_rtt_ms", pa.float64(), "subflows", "connection-level MPTCP RTT: the smoothed RTT of all the pair's "
                                                     "subflow samples, each weighted by the bytes its subflow had "
                                                     "acknowledged since its previous sample, ms"),
    *(Column(name, pa.float64(), "subflows", text) for p in PATHS for name, text in (
        (f"rtt_ms_{p}", f"{p} path: the byte-weighted mean smoothed RTT of its subflows' samples, ms (empty: it "
                        "carried no data)"),
        (f"rtt_sd_ms_{p}", f"{p} path: the byte-weighted standard deviation of those smoothed RTT samples, ms"),
        (f"loss_{p}", f"{p} path: bytes its subflows retransmitted / bytes they sent (retransmissions included)"))),
    Column("subflow_bytes", pa.int64(), "subflows", "bytes the pair's subflows carried once each (bytes sent - bytes "
                                                    "retransmitted, summed over its subflows: payload, no headers)"),
    Column("subflow_excess", pa.float64(), "subflows", "(subflow_bytes - bytes_received) / bytes_received: above 0, "
                                                       "data the MPTCP level sent on more than one subflow"),
    Column("subflow_mismatch", pa.bool_(), "subflows", "the subflows carried more than 10 % beyond, or more than 0.1 % "
                                                       "short of, what the receiver read (rig.store.path_stats)"),
)

RUNS_SCHEMA = pa.schema([pa.field(c.name, c.type) for c in RUNS], metadata={formats.KEY: formats.RUNS})
DESCRIPTIONS = {c.name: c.description for c in RUNS if c.description}
MIB_COUNTERS = {c.name: c.mib for c in RUNS if c.mib}  # pair column -> the sender's MIB counter


def run_rows(run_id: str, names: tuple[str | None, str | None], params: dict, status: dict, pairs: list[dict]) -> list[dict]:
    """The runs.parquet rows of one recorded run, from its params.json, status.json and pairs.json
    as the reader gives them (migrated to the current formats)."""
    run = {"run_id": run_id, "campaign": names[0], "campaign_id": names[1]}
    out = []
    for p in pairs:
        row = {}
        for c in RUNS:
            if c.source == "run":
                row[c.name] = run[c.name]
            elif c.source == "params":
                row[c.name] = params.get(c.name, c.default)
            elif c.source == "status":
                row[c.name] = status.get(c.name)
            else:
                row[c.name] = p.get(c.name)
            if c.type == TIME:
                row[c.name] = formats.utc_time(row[c.name])
        out.append(row)
    return out


def runs_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=RUNS_SCHEMA)
