// kind lte_tti: its config, and each UE's link adaptation (MCS from SINR).
#include "lte_tbs.h"
#include "lte_tti.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rigemu
{

namespace
{

// Spectral efficiency (bit/s/Hz) of CQI 1-15, 3GPP TS 36.213 Table 7.2.3-1.
constexpr double kCqiEfficiency[15] = {0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141,
                                       2.4063, 2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547};

std::vector<std::pair<double, double>>
TraceFrom(const Json& station, const std::string& key)
{
    std::vector<std::pair<double, double>> trace;
    if (station.Has(key) && station.At(key).type == Json::Type::Array)
    {
        for (const Json& step : station.At(key).array)
        {
            if (step.array.size() != 2)
            {
                throw std::runtime_error("lte_tti: " + key + " steps are [seconds, sinr_db]");
            }
            trace.emplace_back(step.array[0].number, step.array[1].number);
        }
        std::sort(trace.begin(), trace.end());
    }
    return trace;
}

double
SinrAt(double constant, const std::vector<std::pair<double, double>>& trace, double nowS)
{
    if (trace.empty() || nowS < trace.front().first)
    {
        return constant;
    }
    auto after = std::upper_bound(trace.begin(), trace.end(), std::make_pair(nowS, 1e300));
    return std::prev(after)->second;
}

} // namespace

int
LteMcsForSinr(double sinrDb)
{
    double gamma = -std::log(5 * 0.00005) / 1.5;
    double efficiency = std::log2(1 + std::pow(10.0, sinrDb / 10) / gamma);
    int cqi = 0;
    while (cqi < 15 && kCqiEfficiency[cqi] < efficiency)
    {
        ++cqi;
    }
    // CQI c reports the efficiency of MCS 2c - 2 (the MCS table's efficiency at that CQI's).
    return cqi == 0 ? -1 : std::min(kLteMaxMcs, 2 * cqi - 2);
}

LteTtiConfig
LteTtiConfig::From(const Json& cell)
{
    LteTtiConfig c;
    c.prb = static_cast<int>(cell.Num("prb"));
    if (c.prb < 6 || c.prb > kLteMaxPrb)
    {
        throw std::runtime_error("lte_tti: prb must be 6-110");
    }
    c.dlScheduler = cell.Str("scheduler", c.dlScheduler);
    c.ulScheduler = cell.Str("ul_scheduler", c.ulScheduler);
    for (const std::string& s : {c.dlScheduler, c.ulScheduler})
    {
        if (s != "rr" && s != "pf")
        {
            throw std::runtime_error("lte_tti: scheduler '" + s + "' is not rr or pf");
        }
    }
    c.targetBler = cell.Num("target_bler", c.targetBler);
    c.retxBler = cell.Num("retx_bler", c.targetBler / 10);
    c.maxHarqTx = static_cast<int>(cell.Num("max_harq_tx", c.maxHarqTx));
    c.harqRttTtis = static_cast<int>(cell.Num("harq_rtt_ms", c.harqRttTtis));
    c.ulGrantDelayTtis = static_cast<int>(cell.Num("ul_grant_delay_ms", c.ulGrantDelayTtis));
    c.dlTxDelayTtis = static_cast<int>(cell.Num("dl_tx_delay_ms", c.dlTxDelayTtis));
    c.srPeriodTtis = std::max(1, static_cast<int>(cell.Num("sr_period_ms", c.srPeriodTtis)));
    c.srToBsrTtis = static_cast<int>(cell.Num("sr_to_bsr_ms", c.srToBsrTtis));
    c.minUlPrb = static_cast<int>(cell.Num("min_ul_prb", c.minUlPrb));
    if (cell.Has("pf_whole_band"))
    {
        const Json& v = cell.At("pf_whole_band");
        c.pfWholeBand = v.type == Json::Type::Bool ? v.boolean : v.number != 0;
    }
    c.rlcBufferBytes = static_cast<uint32_t>(cell.Num("rlc_buffer_bytes", c.rlcBufferBytes));
    c.processingDelayS = cell.Num("processing_delay_s", c.processingDelayS);
    return c;
}

LteTtiUeRadio
LteTtiUeRadio::From(const Json& station, const Json& cell)
{
    LteTtiUeRadio r;
    r.ulSinrDb = station.Num("ul_sinr_db", cell.Num("ul_sinr_db", r.ulSinrDb));
    r.dlSinrDb = station.Num("dl_sinr_db", cell.Num("dl_sinr_db", r.dlSinrDb));
    r.ulTrace = TraceFrom(station, "ul_sinr_trace");
    r.dlTrace = TraceFrom(station, "dl_sinr_trace");
    return r;
}

double
LteTtiUeRadio::SinrDb(bool up, double nowS) const
{
    return up ? SinrAt(ulSinrDb, ulTrace, nowS) : SinrAt(dlSinrDb, dlTrace, nowS);
}

} // namespace rigemu
