#include "dcf.h"

#include <cstdio>
#include <cstdlib>
#include <functional>

namespace rigemu
{

namespace
{

// A station's radio as the end of its edge's uplink: frames sent to it enter the medium.
class DcfPort : public TapNetDevice
{
  public:
    explicit DcfPort(std::function<void(Frame)> send)
        : m_send(std::move(send))
    {
    }

    bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest, uint16_t protocol) override
    {
        return SendFrom(packet, GetAddress(), dest, protocol);
    }

    bool SendFrom(ns3::Ptr<ns3::Packet> packet,
                  const ns3::Address& source,
                  const ns3::Address& dest,
                  uint16_t protocol) override
    {
        Frame frame;
        frame.packet = packet;
        frame.src = ns3::Mac48Address::ConvertFrom(source);
        frame.dst = ns3::Mac48Address::ConvertFrom(dest);
        frame.protocol = protocol;
        m_send(std::move(frame));
        return true;
    }

  private:
    std::function<void(Frame)> m_send;
};

void
WriteNodeCounters(std::FILE* out, const char* prefix, const DcfCounters& now, DcfCounters& reported, size_t queue)
{
    std::fprintf(out,
                 ", \"%scollisions\": %llu, \"%sretries\": %llu, \"%sretry_drops\": %llu, "
                 "\"%squeue_drops\": %llu, \"%sexpired\": %llu, \"%squeue\": %zu",
                 prefix,
                 static_cast<unsigned long long>(now.collisions - reported.collisions),
                 prefix,
                 static_cast<unsigned long long>(now.retries - reported.retries),
                 prefix,
                 static_cast<unsigned long long>(now.retryDrops - reported.retryDrops),
                 prefix,
                 static_cast<unsigned long long>(now.queueDrops - reported.queueDrops),
                 prefix,
                 static_cast<unsigned long long>(now.expired - reported.expired),
                 prefix,
                 queue);
    reported = now;
}

} // namespace

DcfNetwork::DcfNetwork(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    const Json& w = config.At("wifi");
    DcfPhy phy = DcfPhyFor(w.Str("standard"), w.Num("band_ghz"), static_cast<int>(w.Num("width_mhz")));
    m_gateway = MakeTapDevice(OpenTap(config.Str("gateway_tap")));
    m_gateway->SetPromiscReceiveCallback(ns3::MakeCallback(&DcfNetwork::FromGateway, this));
    m_edges = OpenStationEdges(config, m_random);
    // ns-3's WifiMacQueue defaults (500 frames, 500 ms), as in kind "wifi".
    m_medium = std::make_unique<DcfMedium>(phy,
                                           static_cast<int>(m_edges.size()),
                                           static_cast<uint32_t>(w.Num("queue_packets", 500)),
                                           w.Num("max_delay_s", 0.5),
                                           m_random,
                                           [this](int from, int to, Frame&& frame) { FromAir(from, to, std::move(frame)); });
    m_reported.resize(m_edges.size() + 1);
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        int node = static_cast<int>(i) + 1;
        m_nodeOfMac[m_edges[i]->TapMac()] = node;
        m_ports.push_back(ns3::Create<DcfPort>([this, node](Frame frame) {
            m_medium->Enqueue(node, DcfMedium::kAp, std::move(frame));
        }));
        m_edges[i]->OnFrameFromNode([this, i](Frame frame) { m_edges[i]->Uplink(frame, m_ports[i]); });
    }
}

bool
DcfNetwork::FromGateway(ns3::Ptr<ns3::NetDevice>,
                        ns3::Ptr<const ns3::Packet> packet,
                        uint16_t protocol,
                        const ns3::Address& from,
                        const ns3::Address& to,
                        ns3::NetDevice::PacketType)
{
    ApSend(Frame::Of(packet, from, to, protocol));
    return true;
}

void
DcfNetwork::ApSend(Frame frame)
{
    auto known = m_nodeOfMac.find(frame.dst);
    int to = frame.dst.IsGroup() || known == m_nodeOfMac.end() ? -1 : known->second;
    m_medium->Enqueue(DcfMedium::kAp, to, std::move(frame));
}

void
DcfNetwork::FromAir(int from, int to, Frame&& frame)
{
    if (from != DcfMedium::kAp)
    {
        // At the AP: the wired side, and back over the air for other stations (an AP relays).
        m_edges[from - 1]->CountUp(frame.WireBytes());
        auto known = m_nodeOfMac.find(frame.dst);
        bool toStation = !frame.dst.IsGroup() && known != m_nodeOfMac.end();
        if (!toStation)
        {
            frame.out = m_gateway;
            frame.nHops = frame.next = 0;
            Frame wired = frame;
            wired.packet = frame.packet->Copy();
            wired.Forward();
        }
        if (toStation || frame.dst.IsGroup())
        {
            if (!toStation || known->second != from)
            {
                ApSend(std::move(frame));
            }
        }
        return;
    }
    if (to > 0)
    {
        m_edges[to - 1]->Downlink(std::move(frame));
        return;
    }
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        if (m_edges[i]->TapMac() != frame.src) // not back to the station that sent it
        {
            Frame copy = frame;
            copy.packet = frame.packet->Copy();
            m_edges[i]->Downlink(std::move(copy));
        }
    }
}

void
DcfNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        char head[96];
        std::snprintf(head, sizeof(head), ", \"data_mode\": \"%s\"", m_medium->Phy().dataMode.c_str());
        // The edge writes the line; the medium's counters of this station go in as extra members.
        std::string extra = head;
        char* buffer = nullptr;
        size_t size = 0;
        std::FILE* members = open_memstream(&buffer, &size);
        WriteNodeCounters(members, "", m_medium->Counters(i + 1), m_reported[i + 1], m_medium->QueueLength(i + 1));
        std::fclose(members);
        extra += buffer;
        std::free(buffer);
        m_edges[i]->WriteStats(out, unixTime, extra);
    }
    // The AP's line: its downlink counters and the share of the second the channel was busy.
    double busy = m_medium->BusySeconds();
    std::fprintf(out, "{\"t\": %.3f, \"busy_share\": %.4f", unixTime, busy - m_reportedBusyS);
    m_reportedBusyS = busy;
    WriteNodeCounters(out, "ap_", m_medium->Counters(DcfMedium::kAp), m_reported[0], m_medium->QueueLength(DcfMedium::kAp));
    std::fprintf(out, "}\n");
}

} // namespace rigemu
