#include "pipe.h"

#include "ns3/simulator.h"

#include <algorithm>

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
    if (out->SupportsSendFrom())
    {
        out->SendFrom(packet, src, dst, protocol);
    }
    else
    {
        out->Send(packet, dst, protocol);
    }
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
        return;
    }
    m_busy = true;
    double seconds = 0;
    if (m_config.rateBps > 0)
    {
        seconds = m_queue.front().WireBytes() * 8.0 / m_config.rateBps;
    }
    ns3::Simulator::Schedule(ns3::Seconds(seconds), &Pipe::EndTransmission, this);
}

void
Pipe::EndTransmission()
{
    Frame frame = std::move(m_queue.front());
    m_queue.pop_front();
    if (m_config.loss > 0 && m_random->GetValue() < m_config.loss)
    {
        m_counters.lossDrops++;
    }
    else
    {
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
    StartNext();
}

void
Pipe::Deliver(Frame frame)
{
    m_counters.frames++;
    m_counters.bytes += frame.WireBytes();
    frame.Forward();
}

} // namespace rigemu
