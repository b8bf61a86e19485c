#include "pipe.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace rigemu
{

PipeConfig
PipeConfigFrom(const Json& j)
{
    PipeConfig c;
    c.rateBps = j.Num("rate_bps");
    c.delayS = j.Num("delay_s");
    c.jitterS = j.Num("jitter_s", 0.0);
    c.loss = j.Num("loss", 0.0);
    c.queuePackets = static_cast<uint32_t>(j.Num("queue_packets"));
    return c;
}

Frame
Frame::Of(ns3::Ptr<const ns3::Packet> packet, const ns3::Address& from, const ns3::Address& to, uint16_t protocol)
{
    Frame frame;
    frame.packet = packet->Copy();
    frame.src = ns3::Mac48Address::ConvertFrom(from);
    frame.dst = ns3::Mac48Address::ConvertFrom(to);
    frame.protocol = protocol;
    return frame;
}

void
Frame::Forward()
{
    if (next < nHops)
    {
        Pipe* hop = hops[next++];
        hop->Enqueue(*this);
        return;
    }
    bool sent = out->SupportsSendFrom() ? out->SendFrom(packet, src, dst, protocol) : out->Send(packet, dst, protocol);
    if (!sent && nHops > 0)
    {
        hops[nHops - 1]->CountTapDrop(); // a drop like the pipes': the last one counts it
    }
}

std::shared_ptr<const Trace>
LoadTrace(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error("cannot read trace " + path);
    }
    auto trace = std::make_shared<Trace>();
    std::vector<uint32_t> atZero; // an opportunity at 0 is the same instant as one at the period's end
    long long value = 0;
    while (in >> value)
    {
        if (value < 0 || (!trace->ms.empty() && value < trace->ms.back()) || value > 0xffffffffLL)
        {
            throw std::runtime_error("trace " + path + ": not a non-decreasing list of ms");
        }
        (value == 0 ? atZero : trace->ms).push_back(static_cast<uint32_t>(value));
    }
    if (!in.eof() || trace->ms.empty())
    {
        throw std::runtime_error("trace " + path + ": not a non-decreasing list of ms");
    }
    trace->periodMs = trace->ms.back();
    trace->ms.insert(trace->ms.end(), atZero.size(), trace->periodMs);
    return trace;
}

Pipe::Pipe(const PipeConfig& config, ns3::Ptr<ns3::UniformRandomVariable> random)
    : m_config(config),
      m_random(random)
{
}

void
Pipe::Enqueue(Frame frame)
{
    if (m_queue.size() >= m_config.queuePackets)
    {
        m_counters.queueDrops++;
        return;
    }
    if (!m_up)
    {
        m_counters.lossDrops++;
        return;
    }
    m_queue.push_back(std::move(frame));
    if (!m_busy)
    {
        StartNext();
    }
}

void
Pipe::StartNext()
{
    if (m_queue.empty())
    {
        m_busy = false;
        m_credit = 0;
        return;
    }
    m_busy = true;
    if (m_trace)
    {
        auto [at, count] = NextOpportunity(ns3::Simulator::Now());
        m_service = ns3::Simulator::Schedule(at - ns3::Simulator::Now(), &Pipe::TraceOpportunity, this, count);
        return;
    }
    double seconds = 0;
    if (m_config.rateBps > 0)
    {
        seconds = m_queue.front().WireBytes() * 8.0 / m_config.rateBps;
    }
    m_service = ns3::Simulator::Schedule(ns3::Seconds(seconds), &Pipe::EndTransmission, this);
}

void
Pipe::EndTransmission()
{
    Frame frame = std::move(m_queue.front());
    m_queue.pop_front();
    Depart(std::move(frame));
    StartNext();
}

void
Pipe::TraceOpportunity(uint32_t count)
{
    m_credit += count * Trace::kOpportunityBytes;
    while (!m_queue.empty() && m_queue.front().WireBytes() <= m_credit)
    {
        m_credit -= m_queue.front().WireBytes();
        Frame frame = std::move(m_queue.front());
        m_queue.pop_front();
        Depart(std::move(frame));
    }
    if (m_queue.empty())
    {
        m_busy = false;
        m_credit = 0; // Mahimahi: opportunities nobody used are gone
        return;
    }
    auto [at, next] = NextOpportunity(ns3::Simulator::Now() + ns3::NanoSeconds(1));
    m_service = ns3::Simulator::Schedule(at - ns3::Simulator::Now(), &Pipe::TraceOpportunity, this, next);
}

std::pair<ns3::Time, uint32_t>
Pipe::NextOpportunity(ns3::Time at) const
{
    // Opportunities are at origin + cycle x period + ms[i], every ms[i] in (0, period].
    const Trace& t = *m_trace;
    const int64_t periodNs = static_cast<int64_t>(t.periodMs) * 1000000;
    int64_t elapsed = std::max<int64_t>(0, (at - m_traceOrigin).GetNanoSeconds());
    int64_t cycle = elapsed / periodNs;
    int64_t within = elapsed % periodNs;
    if (within == 0 && cycle > 0) // the previous cycle's last instant
    {
        cycle--;
        within = periodNs;
    }
    uint32_t firstMs = static_cast<uint32_t>((within + 999999) / 1000000);
    auto first = std::lower_bound(t.ms.begin(), t.ms.end(), std::max<uint32_t>(firstMs, 1));
    auto last = std::upper_bound(first, t.ms.end(), *first);
    ns3::Time when = m_traceOrigin + ns3::NanoSeconds(cycle * periodNs + static_cast<int64_t>(*first) * 1000000);
    return {when, static_cast<uint32_t>(last - first)};
}

void
Pipe::Depart(Frame frame)
{
    if (m_config.loss > 0 && m_random->GetValue() < m_config.loss)
    {
        m_counters.lossDrops++;
        return;
    }
    ns3::Time now = ns3::Simulator::Now();
    double extra = m_config.delayS;
    if (m_config.jitterS > 0)
    {
        extra += m_random->GetValue() * m_config.jitterS;
    }
    ns3::Time at = std::max(m_lastDelivery, now + ns3::Seconds(extra));
    m_lastDelivery = at;
    if (at == now)
    {
        Deliver(std::move(frame));
    }
    else
    {
        ns3::Simulator::Schedule(at - now, &Pipe::Deliver, this, frame);
    }
}

void
Pipe::Deliver(Frame frame)
{
    if (!m_up) // in flight when the path was cut
    {
        m_counters.lossDrops++;
        return;
    }
    m_counters.frames++;
    m_counters.bytes += frame.WireBytes();
    frame.Forward();
}

void
Pipe::Restart()
{
    ns3::Simulator::Cancel(m_service);
    m_busy = false;
    m_credit = 0;
    StartNext();
}

void
Pipe::Apply(const PipeUpdate& u)
{
    if (u.delayS)
    {
        m_config.delayS = *u.delayS;
    }
    if (u.jitterS)
    {
        m_config.jitterS = *u.jitterS;
    }
    if (u.loss)
    {
        m_config.loss = *u.loss;
    }
    if (u.queuePackets)
    {
        m_config.queuePackets = *u.queuePackets;
    }
    bool modeChanged = false;
    if (u.rateBps)
    {
        m_config.rateBps = *u.rateBps;
        modeChanged = m_trace != nullptr; // a frame on the wire at the old rate just finishes
        m_trace = nullptr;
    }
    if (u.trace)
    {
        m_trace = u.trace;
        m_traceOrigin = ns3::Simulator::Now();
        modeChanged = true;
    }
    if (u.up && !*u.up)
    {
        m_up = false;
        ns3::Simulator::Cancel(m_service);
        m_counters.lossDrops += m_queue.size();
        m_queue.clear();
        m_busy = false;
        m_credit = 0;
        return;
    }
    if (u.up)
    {
        m_up = true;
    }
    if (modeChanged && m_busy)
    {
        Restart();
    }
}

} // namespace rigemu
