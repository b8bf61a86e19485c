#include "lte_tti.h"

#include "lte_tbs.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace rigemu
{

namespace
{

// Bytes a TB spends on headers: MAC (subheaders, BSR) per TB, RLC UM per PDU, and per SDU
// segment PDCP's header or RLC's length indicator.
constexpr uint32_t kTbHeaderBytes = 5;
constexpr uint32_t kSegmentHeaderBytes = 2;
// Proportional fair: the served rate's moving average spans this many TTIs.
constexpr double kPfWindowTtis = 100.0;

// Downlink resource block group size for a bandwidth (36.213 Table 7.1.6.1-1).
int
RbgSize(int prb)
{
    return prb <= 10 ? 1 : prb <= 26 ? 2 : prb <= 63 ? 3 : 4;
}

} // namespace

LteTtiCell::LteTtiCell(const LteTtiConfig& config, std::vector<LteTtiUeRadio> ues, Deliver deliver)
    : m_config(config),
      m_deliver(std::move(deliver)),
      m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    for (auto& radio : ues)
    {
        Ue ue;
        ue.radio = std::move(radio);
        m_ues.push_back(std::move(ue));
    }
}

int64_t
LteTtiCell::NowTti() const
{
    return ns3::Simulator::Now().GetNanoSeconds() / 1000000;
}

bool
LteTtiCell::Enqueue(size_t ue, bool up, Frame frame)
{
    BearerState& b = Bearer(ue, up);
    uint32_t size = frame.packet->GetSize();
    if (b.unsentBytes + size > m_config.rlcBufferBytes)
    {
        b.counters.bufferDrops++;
        return false;
    }
    Sdu sdu;
    sdu.frame = std::move(frame);
    sdu.enqueued = ns3::Simulator::Now();
    sdu.unsent = size;
    b.sdus.push_back(std::move(sdu));
    b.unsentBytes += size;
    if (!up)
    {
        Wake();
        return true;
    }
    Ue& u = m_ues[ue];
    if (u.ulKnown == 0 && u.ulGranted == 0 && !u.srPending)
    {
        // Backlogged with no grant coming: a scheduling request at the UE's next SR
        // opportunity, then the eNodeB learns the buffer (BSR) and starts granting.
        u.srPending = true;
        int64_t period = m_config.srPeriodTtis;
        int64_t offset = static_cast<int64_t>(ue) % period;
        int64_t next = NowTti() + 1;
        next += ((offset - next) % period + period) % period;
        ns3::Time at = ns3::MilliSeconds(next + m_config.srToBsrTtis);
        ns3::Simulator::Schedule(at - ns3::Simulator::Now(), &LteTtiCell::OnScheduledRequest, this, ue);
    }
    return true;
}

void
LteTtiCell::OnScheduledRequest(size_t ue)
{
    Ue& u = m_ues[ue];
    u.srPending = false;
    u.ulKnown = std::max(u.ulKnown, u.ul.unsentBytes);
    Wake();
}

void
LteTtiCell::Wake()
{
    if (m_tti.IsPending())
    {
        return;
    }
    // The next TTI boundary (now, if this is one: an SR decoded at a boundary is served in it).
    int64_t nowNs = ns3::Simulator::Now().GetNanoSeconds();
    ns3::Time next = ns3::NanoSeconds((nowNs + 999999) / 1000000 * 1000000);
    m_tti = ns3::Simulator::Schedule(next - ns3::Simulator::Now(), &LteTtiCell::Tti, this);
}

bool
LteTtiCell::Busy() const
{
    if (!m_ulAir.empty() || !m_dlRetx.empty())
    {
        return true;
    }
    for (const Ue& u : m_ues)
    {
        if (u.ulKnown > u.ulGranted || u.dl.unsentBytes > 0)
        {
            return true;
        }
    }
    return false;
}

void
LteTtiCell::Tti()
{
    int64_t t = NowTti();
    m_ttisRun++;
    // PUSCH of this TTI: fresh grants are filled from the UE's buffer now; each carries a BSR.
    auto air = m_ulAir.find(t);
    if (air != m_ulAir.end())
    {
        std::vector<Tb> tbs = std::move(air->second);
        m_ulAir.erase(air);
        for (Tb& tb : tbs)
        {
            if (tb.tx == 0)
            {
                Ue& u = m_ues[tb.ue];
                u.ulGranted -= std::min<uint64_t>(u.ulGranted, tb.bytes);
                tb = Fill(tb.ue, true, tb.mcs, tb.prbs); // nothing left: padding only
                u.ulKnown = u.ul.unsentBytes;
            }
            Transmit(std::move(tb), t);
        }
    }
    auto retx = m_dlRetx.find(t);
    if (retx != m_dlRetx.end())
    {
        std::vector<Tb> tbs = std::move(retx->second);
        m_dlRetx.erase(retx);
        for (Tb& tb : tbs)
        {
            Transmit(std::move(tb), t);
        }
    }
    ScheduleUplink(t);
    ScheduleDownlink(t);
    m_ulReserved.erase(m_ulReserved.begin(), m_ulReserved.upper_bound(t + m_config.ulGrantDelayTtis));
    m_dlReserved.erase(m_dlReserved.begin(), m_dlReserved.upper_bound(t));
    if (Busy())
    {
        m_tti = ns3::Simulator::Schedule(ns3::MilliSeconds(1), &LteTtiCell::Tti, this);
    }
}

int
LteTtiCell::McsOf(size_t ue, bool up) const
{
    return LteMcsForSinr(m_ues[ue].radio.SinrDb(up, ns3::Simulator::Now().GetSeconds()));
}

uint32_t
LteTtiCell::TbBytes(int mcs, int prbs, bool up) const
{
    int itbs = up ? LteUlItbs(mcs) : LteDlItbs(mcs);
    return LteTbsBits(itbs, std::clamp(prbs, 1, kLteMaxPrb)) / 8;
}

void
LteTtiCell::ScheduleUplink(int64_t t)
{
    int64_t txTti = t + m_config.ulGrantDelayTtis;
    int available = m_config.prb;
    auto reserved = m_ulReserved.find(txTti);
    if (reserved != m_ulReserved.end())
    {
        available -= reserved->second;
    }
    std::vector<bool> retxThen(m_ues.size(), false); // one PUSCH per UE and TTI
    auto air = m_ulAir.find(txTti);
    if (air != m_ulAir.end())
    {
        for (const Tb& tb : air->second)
        {
            retxThen[tb.ue] = true;
        }
    }
    std::vector<size_t> ues;
    std::vector<uint64_t> need;
    std::vector<int> mcs;
    for (size_t i = 0; i < m_ues.size(); ++i)
    {
        const Ue& u = m_ues[i];
        int m = McsOf(i, true);
        if (u.ulKnown > u.ulGranted && !retxThen[i] && m >= 0)
        {
            ues.push_back(i);
            need.push_back(u.ulKnown - u.ulGranted);
            mcs.push_back(m);
        }
    }
    std::vector<int> prbs = Allocate(m_config.ulScheduler, ues, need, mcs, true, available, 1, m_config.minUlPrb);
    for (size_t k = 0; k < ues.size(); ++k)
    {
        if (prbs[k] > 0)
        {
            Tb tb;
            tb.ue = ues[k];
            tb.up = true;
            tb.mcs = mcs[k];
            tb.prbs = prbs[k];
            tb.bytes = TbBytes(mcs[k], prbs[k], true);
            m_ues[ues[k]].ulGranted += tb.bytes;
            m_ulAir[txTti].push_back(std::move(tb));
        }
    }
}

void
LteTtiCell::ScheduleDownlink(int64_t t)
{
    int rbg = RbgSize(m_config.prb);
    int available = m_config.prb / rbg * rbg;
    auto reserved = m_dlReserved.find(t);
    if (reserved != m_dlReserved.end())
    {
        available -= reserved->second;
    }
    std::vector<size_t> ues;
    std::vector<uint64_t> need;
    std::vector<int> mcs;
    for (size_t i = 0; i < m_ues.size(); ++i)
    {
        int m = McsOf(i, false);
        if (m_ues[i].dl.unsentBytes > 0 && m >= 0)
        {
            ues.push_back(i);
            need.push_back(m_ues[i].dl.unsentBytes);
            mcs.push_back(m);
        }
    }
    std::vector<int> prbs = Allocate(m_config.dlScheduler, ues, need, mcs, false, std::max(0, available), rbg, rbg);
    for (size_t k = 0; k < ues.size(); ++k)
    {
        if (prbs[k] > 0)
        {
            Transmit(Fill(ues[k], false, mcs[k], prbs[k]), t);
        }
    }
}

std::vector<int>
LteTtiCell::Allocate(const std::string& kind,
                     const std::vector<size_t>& ues,
                     const std::vector<uint64_t>& need,
                     const std::vector<int>& mcs,
                     bool up,
                     int available,
                     int step,
                     int minPrb)
{
    size_t n = ues.size();
    std::vector<int> given(n, 0);
    // PRBs that would carry a UE's whole backlog (headers included), in steps.
    std::vector<int> wanted(n);
    for (size_t k = 0; k < n; ++k)
    {
        uint64_t bytes = need[k] + kTbHeaderBytes + kSegmentHeaderBytes * (need[k] / 1400 + 1);
        int p = step;
        while (p < available && TbBytes(mcs[k], p, up) < bytes)
        {
            p += step;
        }
        wanted[k] = p;
    }
    int left = available;
    if (kind == "pf")
    {
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        auto metric = [&](size_t k) {
            return TbBytes(mcs[k], m_config.prb, up) / Bearer(ues[k], up).avgBps;
        };
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return metric(a) > metric(b); });
        for (size_t k : order)
        {
            if (left < minPrb)
            {
                break;
            }
            // ns-3's PF gives every RBG to the best UE of the TTI, whatever it needs.
            given[k] = m_config.pfWholeBand ? left : std::min(wanted[k], left);
            left -= given[k];
        }
    }
    else if (n > 0)
    {
        // Round robin: an equal share each (at least minPrb: then not everyone gets one this
        // TTI, the rotation makes up for it), what a UE does not need goes to the others.
        size_t start = m_rrNext++ % n;
        int share = std::max(minPrb, (available / static_cast<int>(n)) / step * step);
        for (size_t j = 0; j < n && left >= minPrb; ++j)
        {
            size_t k = (start + j) % n;
            given[k] = std::min({share, wanted[k], left});
            left -= given[k];
        }
        for (size_t j = 0; j < n && left >= step; ++j)
        {
            size_t k = (start + j) % n;
            if (given[k] > 0 && given[k] < wanted[k])
            {
                int more = std::min(wanted[k] - given[k], left) / step * step;
                given[k] += more;
                left -= more;
            }
        }
    }
    // Proportional fair bookkeeping: every UE's served rate, a moving average over TTIs.
    for (size_t i = 0; i < m_ues.size(); ++i)
    {
        double served = 0;
        for (size_t k = 0; k < n; ++k)
        {
            if (ues[k] == i && given[k] > 0)
            {
                served = TbBytes(mcs[k], given[k], up) * 8000.0;
            }
        }
        double& avg = Bearer(i, up).avgBps;
        avg = std::max(1.0, (1 - 1 / kPfWindowTtis) * avg + served / kPfWindowTtis);
    }
    return given;
}

LteTtiCell::Tb
LteTtiCell::Fill(size_t ue, bool up, int mcs, int prbs)
{
    Tb tb;
    tb.ue = ue;
    tb.up = up;
    tb.mcs = mcs;
    tb.prbs = prbs;
    tb.bytes = TbBytes(mcs, prbs, up);
    BearerState& b = Bearer(ue, up);
    uint32_t room = tb.bytes > kTbHeaderBytes ? tb.bytes - kTbHeaderBytes : 0;
    while (room > kSegmentHeaderBytes && b.nextUnsent < b.firstSeq + b.sdus.size())
    {
        Sdu& sdu = b.sdus[b.nextUnsent - b.firstSeq];
        uint32_t take = std::min(sdu.unsent, room - kSegmentHeaderBytes);
        sdu.unsent -= take;
        sdu.pendingTbs++;
        room -= take + kSegmentHeaderBytes;
        b.unsentBytes -= take;
        tb.seqs.push_back(b.nextUnsent);
        if (sdu.unsent == 0)
        {
            b.nextUnsent++;
        }
    }
    return tb;
}

void
LteTtiCell::Transmit(Tb tb, int64_t tti)
{
    BearerState& b = Bearer(tb.ue, tb.up);
    tb.tx++;
    if (tb.tx == 1)
    {
        b.counters.grants++;
        b.counters.mcsSum += tb.mcs;
        b.counters.prbSum += tb.prbs;
        b.counters.tbBits += tb.bytes * 8ull;
    }
    else
    {
        b.counters.harqRetx++;
    }
    double bler = tb.tx == 1 ? m_config.targetBler : m_config.retxBler;
    bool ok = tb.seqs.empty() || bler <= 0 || m_random->GetValue() >= bler;
    if (!ok && tb.tx < m_config.maxHarqTx)
    {
        // NACK: the same TB again one HARQ round trip later, on as many PRBs.
        int64_t again = tti + m_config.harqRttTtis;
        (tb.up ? m_ulReserved : m_dlReserved)[again] += tb.prbs;
        (tb.up ? m_ulAir : m_dlRetx)[again].push_back(std::move(tb));
        return;
    }
    if (tb.seqs.empty())
    {
        return;
    }
    int64_t decodedTti = tb.up ? tti + 1 : tti + m_config.dlTxDelayTtis;
    ns3::Time at = ns3::MilliSeconds(decodedTti) + ns3::Seconds(m_config.processingDelayS);
    ns3::Simulator::Schedule(at - ns3::Simulator::Now(), &LteTtiCell::Decoded, this, std::move(tb), ok);
}

void
LteTtiCell::Decoded(const Tb& tb, bool ok)
{
    BearerState& b = Bearer(tb.ue, tb.up);
    if (!ok)
    {
        b.counters.harqFailed++;
    }
    for (uint64_t seq : tb.seqs)
    {
        Sdu& sdu = b.sdus[seq - b.firstSeq];
        sdu.pendingTbs--;
        sdu.lost = sdu.lost || !ok;
    }
    DeliverInOrder(tb.ue, tb.up);
}

void
LteTtiCell::DeliverInOrder(size_t ue, bool up)
{
    // RLC UM reassembly: SDUs leave in order; one a failed TB carried part of is dropped.
    BearerState& b = Bearer(ue, up);
    while (!b.sdus.empty() && b.sdus.front().unsent == 0 && b.sdus.front().pendingTbs == 0)
    {
        Sdu sdu = std::move(b.sdus.front());
        b.sdus.pop_front();
        b.firstSeq++;
        if (!sdu.lost)
        {
            b.counters.deliveredBytes += sdu.frame.packet->GetSize();
            m_deliver(ue, up, std::move(sdu.frame), sdu.enqueued);
        }
    }
}

void
LteTtiCell::ResetCounters()
{
    for (Ue& u : m_ues)
    {
        u.ul.counters = LteTtiCounters();
        u.dl.counters = LteTtiCounters();
    }
}

} // namespace rigemu
