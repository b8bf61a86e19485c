#include "edge.h"

#include "tap.h"

namespace rigemu
{

std::unique_ptr<Pipe>
MakePipe(const Json& j, ns3::Ptr<ns3::UniformRandomVariable> random)
{
    PipeConfig c = PipeConfigFrom(j);
    if (c.rateBps <= 0 && c.delayS <= 0 && c.jitterS <= 0 && c.loss <= 0)
    {
        return nullptr;
    }
    return std::make_unique<Pipe>(c, random);
}

StationEdge::StationEdge(const Json& station, ns3::Ptr<ns3::UniformRandomVariable> random)
    : m_tap(station.Str("tap")),
      m_up(MakePipe(station.At("up"), random)),
      m_down(MakePipe(station.At("down"), random)),
      m_upConfig(PipeConfigFrom(station.At("up"))),
      m_downConfig(PipeConfigFrom(station.At("down"))),
      m_random(random)
{
    // Opened in its host's namespace under the node's interface name ("netns", "ifname") when
    // the config gives them, else here under the station's TAP name.
    std::string ifname = station.Str("ifname", m_tap);
    std::string netns = station.Str("netns", "");
    m_device = MakeTapDevice(OpenTap(ifname, netns));
    m_tapMac = rigemu::TapMac(ifname, netns);
}

ns3::Ptr<TapNetDevice>
OpenGatewayTap(const Json& config)
{
    std::string tap = config.Str("gateway_tap");
    return MakeTapDevice(OpenTap(config.Str("gateway_ifname", tap), config.Str("gateway_netns", "")));
}

void
StationEdge::OnFrameFromNode(std::function<void(Frame)> handler)
{
    m_fromNode = std::move(handler);
    m_device->SetPromiscReceiveCallback(ns3::MakeCallback(&StationEdge::Receive, this));
}

bool
StationEdge::Receive(ns3::Ptr<ns3::NetDevice>,
                     ns3::Ptr<const ns3::Packet> packet,
                     uint16_t protocol,
                     const ns3::Address& from,
                     const ns3::Address& to,
                     ns3::NetDevice::PacketType)
{
    m_fromNode(Frame::Of(packet, from, to, protocol));
    return true;
}

void
StationEdge::Uplink(Frame frame, ns3::Ptr<ns3::NetDevice> radio)
{
    frame.nHops = 0;
    frame.next = 0;
    if (m_up)
    {
        frame.hops[frame.nHops++] = m_up.get();
    }
    frame.out = radio;
    frame.Forward();
}

void
StationEdge::Downlink(Frame frame)
{
    m_counters.downFrames++;
    m_counters.downBytes += frame.WireBytes();
    frame.nHops = 0;
    frame.next = 0;
    if (m_down)
    {
        frame.hops[frame.nHops++] = m_down.get();
    }
    frame.out = m_device;
    frame.Forward();
}

Pipe*
StationEdge::ControlPipe(bool up)
{
    std::unique_ptr<Pipe>& pipe = up ? m_up : m_down;
    if (!pipe)
    {
        pipe = std::make_unique<Pipe>(up ? m_upConfig : m_downConfig, m_random);
    }
    return pipe.get();
}

StationEdge*
FindEdge(const std::vector<std::unique_ptr<StationEdge>>& edges, const std::string& tap)
{
    for (const auto& edge : edges)
    {
        if (edge->Tap() == tap)
        {
            return edge.get();
        }
    }
    return nullptr;
}

void
StationEdge::CountUp(uint32_t bytes)
{
    m_counters.upFrames++;
    m_counters.upBytes += bytes;
}

void
StationEdge::WriteStats(std::FILE* out, double unixTime, const std::string& extraMembers)
{
    std::fprintf(out,
                 "{\"t\": %.3f, \"station\": \"%s\", \"up_frames\": %llu, \"up_bytes\": %llu, "
                 "\"down_frames\": %llu, \"down_bytes\": %llu%s}\n",
                 unixTime,
                 m_tap.c_str(),
                 static_cast<unsigned long long>(m_counters.upFrames),
                 static_cast<unsigned long long>(m_counters.upBytes),
                 static_cast<unsigned long long>(m_counters.downFrames),
                 static_cast<unsigned long long>(m_counters.downBytes),
                 extraMembers.c_str());
    m_counters = EdgeCounters();
}

std::vector<std::unique_ptr<StationEdge>>
OpenStationEdges(const Json& config, ns3::Ptr<ns3::UniformRandomVariable> random)
{
    std::vector<std::unique_ptr<StationEdge>> edges;
    for (const Json& s : config.At("stations").array)
    {
        edges.push_back(std::make_unique<StationEdge>(s, random));
    }
    return edges;
}

} // namespace rigemu
