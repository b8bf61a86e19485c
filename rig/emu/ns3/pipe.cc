#include "pipe.h"

#include "ns3/simulator.h"

#include <algorithm>

namespace rigemu
{

void
Frame::Forward()
{
    if (next < nHops)
    {
        Pipe* hop = hops[next++];
        hop->Enqueue(*this);
        return;
    }
    out->SendFrom(packet, src, dst, protocol);
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
