#include "links.h"

#include "tap.h"

namespace rigemu
{

namespace
{

// Per-second deltas of one pipe's counters, as JSON members with a prefix ("up_", "down_").
void
WriteDelta(std::FILE* out, const char* prefix, const Pipe& pipe, PipeCounters& reported)
{
    const PipeCounters& now = pipe.Counters();
    std::fprintf(out,
                 "\"%sframes\": %llu, \"%sbytes\": %llu, \"%squeue_drops\": %llu, "
                 "\"%sloss_drops\": %llu, \"%squeue\": %zu",
                 prefix,
                 static_cast<unsigned long long>(now.frames - reported.frames),
                 prefix,
                 static_cast<unsigned long long>(now.bytes - reported.bytes),
                 prefix,
                 static_cast<unsigned long long>(now.queueDrops - reported.queueDrops),
                 prefix,
                 static_cast<unsigned long long>(now.lossDrops - reported.lossDrops),
                 prefix,
                 pipe.QueueLength());
    reported = now;
}

} // namespace

LinksNetwork::LinksNetwork(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    auto receive = ns3::MakeCallback(&LinksNetwork::Receive, this);
    if (config.Has("medium") && config.At("medium").Num("rate_bps") > 0)
    {
        PipeConfig medium;
        medium.rateBps = config.At("medium").Num("rate_bps");
        medium.queuePackets = static_cast<uint32_t>(config.At("medium").Num("queue_packets"));
        m_medium = std::make_unique<Pipe>(medium, m_random);
    }
    // The TAP fds belong to their TapNetDevices, which close them when the simulator is destroyed.
    m_gateway = MakeTapDevice(OpenTap(config.Str("gateway_tap")));
    m_gateway->SetPromiscReceiveCallback(receive);
    for (const Json& s : config.At("stations").array)
    {
        Station station;
        station.tap = s.Str("tap");
        station.up = std::make_unique<Pipe>(PipeConfigFrom(s.At("up")), m_random);
        station.down = std::make_unique<Pipe>(PipeConfigFrom(s.At("down")), m_random);
        station.device = MakeTapDevice(OpenTap(station.tap));
        station.device->SetPromiscReceiveCallback(receive);
        m_stations.push_back(std::move(station));
    }
}

bool
LinksNetwork::Receive(ns3::Ptr<ns3::NetDevice> device,
                      ns3::Ptr<const ns3::Packet> packet,
                      uint16_t protocol,
                      const ns3::Address& from,
                      const ns3::Address& to,
                      ns3::NetDevice::PacketType)
{
    Frame frame = Frame::Of(packet, from, to, protocol);
    if (device == m_gateway)
    {
        FromGateway(frame);
        return true;
    }
    for (size_t i = 0; i < m_stations.size(); ++i)
    {
        if (device == m_stations[i].device)
        {
            FromStation(i, frame);
            break;
        }
    }
    return true;
}

void
LinksNetwork::Send(Frame frame, std::initializer_list<Pipe*> route, ns3::Ptr<ns3::NetDevice> out)
{
    frame.nHops = 0;
    frame.next = 0;
    for (Pipe* hop : route)
    {
        if (hop)
        {
            frame.hops[frame.nHops++] = hop;
        }
    }
    frame.out = out;
    frame.packet = frame.packet->Copy(); // every copy of a fanned-out frame owns its payload
    frame.Forward();
}

void
LinksNetwork::FromGateway(Frame frame)
{
    auto known = m_stationOfMac.find(frame.dst);
    if (frame.dst.IsGroup() || known == m_stationOfMac.end())
    {
        for (auto& s : m_stations)
        {
            Send(frame, {m_medium.get(), s.down.get()}, s.device);
        }
        return;
    }
    Station& s = m_stations[known->second];
    Send(frame, {m_medium.get(), s.down.get()}, s.device);
}

void
LinksNetwork::FromStation(size_t index, Frame frame)
{
    if (!frame.src.IsGroup())
    {
        m_stationOfMac[frame.src] = index;
    }
    Station& from = m_stations[index];
    auto known = m_stationOfMac.find(frame.dst);
    bool toStation = !frame.dst.IsGroup() && known != m_stationOfMac.end();
    if (toStation)
    {
        if (known->second != index) // relayed through the AP: the medium is crossed twice
        {
            Station& to = m_stations[known->second];
            Send(frame,
                 {m_medium.get(), from.up.get(), m_medium.get(), to.down.get()},
                 to.device);
        }
        return;
    }
    Send(frame, {m_medium.get(), from.up.get()}, m_gateway);
    if (frame.dst.IsGroup())
    {
        for (size_t j = 0; j < m_stations.size(); ++j)
        {
            if (j != index)
            {
                Station& to = m_stations[j];
                Send(frame,
                     {m_medium.get(), from.up.get(), m_medium.get(), to.down.get()},
                     to.device);
            }
        }
    }
}

bool
LinksNetwork::HasStation(const std::string& tap) const
{
    for (const auto& s : m_stations)
    {
        if (s.tap == tap)
        {
            return true;
        }
    }
    return false;
}

Pipe*
LinksNetwork::StationPipe(const std::string& tap, bool up)
{
    for (auto& s : m_stations)
    {
        if (s.tap == tap)
        {
            return up ? s.up.get() : s.down.get();
        }
    }
    return nullptr;
}

void
LinksNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (auto& s : m_stations)
    {
        std::fprintf(out, "{\"t\": %.3f, \"station\": \"%s\", ", unixTime, s.tap.c_str());
        WriteDelta(out, "up_", *s.up, s.upReported);
        std::fprintf(out, ", ");
        WriteDelta(out, "down_", *s.down, s.downReported);
        std::fprintf(out, "}\n");
    }
    if (m_medium)
    {
        std::fprintf(out, "{\"t\": %.3f, ", unixTime);
        WriteDelta(out, "medium_", *m_medium, m_mediumReported);
        std::fprintf(out, "}\n");
    }
}

} // namespace rigemu
