#include "station_star.h"

namespace rigemu
{

StationStar::StationStar(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    // The TAP fds belong to their TapNetDevices, which close them when the simulator is destroyed.
    m_gateway = OpenGatewayTap(config);
    m_gateway->SetPromiscReceiveCallback(ns3::MakeCallback(&StationStar::ReceiveAtGateway, this));
    m_edges = OpenStationEdges(config, m_random);
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        m_edges[i]->OnFrameFromNode([this, i](Frame frame) { FromStation(i, std::move(frame)); });
    }
}

bool
StationStar::ReceiveAtGateway(ns3::Ptr<ns3::NetDevice>,
                              ns3::Ptr<const ns3::Packet> packet,
                              uint16_t protocol,
                              const ns3::Address& from,
                              const ns3::Address& to,
                              ns3::NetDevice::PacketType)
{
    FromGateway(Frame::Of(packet, from, to, protocol));
    return true;
}

void
StationStar::Learn(size_t station, ns3::Mac48Address mac)
{
    if (!mac.IsGroup())
    {
        m_stationOfMac[mac] = station;
    }
}

std::optional<size_t>
StationStar::StationOf(ns3::Mac48Address dst) const
{
    if (dst.IsGroup())
    {
        return std::nullopt;
    }
    auto known = m_stationOfMac.find(dst);
    if (known == m_stationOfMac.end())
    {
        return std::nullopt;
    }
    return known->second;
}

void
StationStar::ConnectRadio(std::function<void(size_t station, Frame frame)> intoRadio)
{
    m_ports.clear();
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        m_ports.push_back(ns3::CreateObject<FramePort>([intoRadio, i](Frame frame) { intoRadio(i, std::move(frame)); }));
    }
}

void
WriteMembers(std::FILE* out,
             const char* prefix,
             std::initializer_list<std::pair<const char*, unsigned long long>> members)
{
    for (const auto& [name, value] : members)
    {
        std::fprintf(out, ", \"%s%s\": %llu", prefix, name, value);
    }
}

bool
FramePort::SendFrom(ns3::Ptr<ns3::Packet> packet,
                    const ns3::Address& source,
                    const ns3::Address& dest,
                    uint16_t protocol)
{
    Frame frame;
    frame.packet = packet;
    frame.src = ns3::Mac48Address::ConvertFrom(source);
    frame.dst = ns3::Mac48Address::ConvertFrom(dest);
    frame.protocol = protocol;
    m_into(std::move(frame));
    return true;
}

} // namespace rigemu
