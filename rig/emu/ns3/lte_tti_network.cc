#include "lte_tti_network.h"

#include "edge.h"

#include <cmath>

namespace rigemu
{

namespace
{

// Where the up impairment pipe hands a frame over: the cell's uplink of one station.
class CellPort : public TapNetDevice
{
  public:
    std::function<void(Frame)> into;

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
        into(std::move(frame));
        return true;
    }
};

// Per-second deltas of one direction's cell counters as JSON members ("ul_", "dl_").
std::string
CellMembers(const char* prefix, const LteTtiCounters& now, LteTtiCounters& reported, uint64_t queued)
{
    uint64_t grants = now.grants - reported.grants;
    auto mean = [grants](uint64_t sum) {
        return grants ? std::to_string(static_cast<double>(sum) / grants) : std::string("null");
    };
    char text[512];
    std::snprintf(text,
                  sizeof(text),
                  ", \"%smcs\": %s, \"%sgrants\": %llu, \"%stb_bits\": %llu, \"%sprbs\": %s, "
                  "\"%sharq_retx\": %llu, \"%sharq_failed\": %llu, \"%sbuffer_drops\": %llu, \"%sbuffer_bytes\": %llu",
                  prefix, mean(now.mcsSum - reported.mcsSum).c_str(),
                  prefix, static_cast<unsigned long long>(grants),
                  prefix, static_cast<unsigned long long>(now.tbBits - reported.tbBits),
                  prefix, mean(now.prbSum - reported.prbSum).c_str(),
                  prefix, static_cast<unsigned long long>(now.harqRetx - reported.harqRetx),
                  prefix, static_cast<unsigned long long>(now.harqFailed - reported.harqFailed),
                  prefix, static_cast<unsigned long long>(now.bufferDrops - reported.bufferDrops),
                  prefix, static_cast<unsigned long long>(queued));
    reported = now;
    return text;
}

} // namespace

LteTtiNetwork::LteTtiNetwork(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    const Json& cell = config.At("lte_tti");
    std::vector<LteTtiUeRadio> radios;
    Json none;
    none.type = Json::Type::Object;
    for (const Json& s : config.At("stations").array)
    {
        std::string tap = s.Str("tap");
        bool own = cell.Has("ues") && cell.At("ues").Has(tap);
        radios.push_back(LteTtiUeRadio::From(own ? cell.At("ues").At(tap) : none, cell));
    }
    m_cell = std::make_unique<LteTtiCell>(
        LteTtiConfig::From(cell),
        std::move(radios),
        [this](size_t ue, bool up, Frame frame, ns3::Time enqueued) { OutOfCell(ue, up, std::move(frame), enqueued); });

    auto receive = ns3::MakeCallback(&LteTtiNetwork::Receive, this);
    m_gateway = MakeTapDevice(OpenTap(config.Str("gateway_tap")));
    m_gateway->SetPromiscReceiveCallback(receive);
    const auto& stations = config.At("stations").array;
    m_stations.resize(stations.size());
    for (size_t i = 0; i < stations.size(); ++i)
    {
        Station& s = m_stations[i];
        s.tap = stations[i].Str("tap");
        s.up = MakePipe(stations[i].At("up"), m_random);
        s.down = MakePipe(stations[i].At("down"), m_random);
        s.upConfig = PipeConfigFrom(stations[i].At("up"));
        s.downConfig = PipeConfigFrom(stations[i].At("down"));
        s.device = MakeTapDevice(OpenTap(s.tap));
        s.device->SetPromiscReceiveCallback(receive);
        auto port = ns3::CreateObject<CellPort>();
        port->into = [this, i](Frame frame) { IntoCell(i, std::move(frame)); };
        s.cellPort = port;
    }
    m_reportedUp.assign(m_stations.size(), LteTtiCounters());
    m_reportedDown.assign(m_stations.size(), LteTtiCounters());
}

bool
LteTtiNetwork::Receive(ns3::Ptr<ns3::NetDevice> device,
                       ns3::Ptr<const ns3::Packet> packet,
                       uint16_t protocol,
                       const ns3::Address& from,
                       const ns3::Address& to,
                       ns3::NetDevice::PacketType)
{
    Frame frame = Frame::Of(packet, from, to, protocol);
    if (device == m_gateway)
    {
        FromGateway(std::move(frame));
        return true;
    }
    for (size_t i = 0; i < m_stations.size(); ++i)
    {
        if (device == m_stations[i].device)
        {
            FromStation(i, std::move(frame));
            break;
        }
    }
    return true;
}

void
LteTtiNetwork::FromStation(size_t index, Frame frame)
{
    if (!frame.src.IsGroup())
    {
        m_stationOfMac[frame.src] = index;
    }
    Station& s = m_stations[index];
    frame.nHops = 0;
    frame.next = 0;
    if (s.up)
    {
        frame.hops[frame.nHops++] = s.up.get();
    }
    frame.out = s.cellPort;
    frame.Forward();
}

void
LteTtiNetwork::IntoCell(size_t index, Frame frame)
{
    m_cell->Enqueue(index, true, std::move(frame));
}

void
LteTtiNetwork::OutOfCell(size_t index, bool up, Frame frame, ns3::Time)
{
    Station& s = m_stations[index];
    if (!up)
    {
        s.downFrames++;
        s.downBytes += frame.WireBytes();
        frame.nHops = 0;
        frame.next = 0;
        if (s.down)
        {
            frame.hops[frame.nHops++] = s.down.get();
        }
        frame.out = s.device;
        frame.Forward();
        return;
    }
    s.upFrames++;
    s.upBytes += frame.WireBytes();
    // At the eNodeB: to the gateway, or (another UE's MAC, or broadcast) down that UE's downlink.
    auto known = m_stationOfMac.find(frame.dst);
    if (!frame.dst.IsGroup() && known != m_stationOfMac.end())
    {
        if (known->second != index)
        {
            ToStation(known->second, std::move(frame));
        }
        return;
    }
    if (frame.dst.IsGroup())
    {
        for (size_t j = 0; j < m_stations.size(); ++j)
        {
            if (j != index)
            {
                Frame copy = frame;
                copy.packet = frame.packet->Copy();
                ToStation(j, std::move(copy));
            }
        }
    }
    m_gateway->SendFrom(frame.packet, frame.src, frame.dst, frame.protocol);
}

void
LteTtiNetwork::ToStation(size_t index, Frame frame)
{
    m_cell->Enqueue(index, false, std::move(frame));
}

void
LteTtiNetwork::FromGateway(Frame frame)
{
    auto known = m_stationOfMac.find(frame.dst);
    if (frame.dst.IsGroup() || known == m_stationOfMac.end())
    {
        for (size_t j = 0; j < m_stations.size(); ++j)
        {
            Frame copy = frame;
            copy.packet = frame.packet->Copy();
            ToStation(j, std::move(copy));
        }
        return;
    }
    ToStation(known->second, std::move(frame));
}

bool
LteTtiNetwork::HasStation(const std::string& tap) const
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
LteTtiNetwork::StationPipe(const std::string& tap, bool up)
{
    for (auto& s : m_stations)
    {
        if (s.tap == tap)
        {
            // Made on first use (passing frames unchanged until changed), like lte/wifi.
            std::unique_ptr<Pipe>& pipe = up ? s.up : s.down;
            if (!pipe)
            {
                PipeConfig c = up ? s.upConfig : s.downConfig;
                c.queuePackets = std::max<uint32_t>(c.queuePackets, 50);
                pipe = std::make_unique<Pipe>(c, m_random);
            }
            return pipe.get();
        }
    }
    return nullptr;
}

void
LteTtiNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_stations.size(); ++i)
    {
        Station& s = m_stations[i];
        std::string ul = CellMembers("ul_", m_cell->Counters(i, true), m_reportedUp[i], m_cell->QueuedBytes(i, true));
        std::string dl = CellMembers("dl_", m_cell->Counters(i, false), m_reportedDown[i], m_cell->QueuedBytes(i, false));
        std::fprintf(out,
                     "{\"t\": %.3f, \"station\": \"%s\", \"up_frames\": %llu, \"up_bytes\": %llu, "
                     "\"down_frames\": %llu, \"down_bytes\": %llu%s%s}\n",
                     unixTime,
                     s.tap.c_str(),
                     static_cast<unsigned long long>(s.upFrames),
                     static_cast<unsigned long long>(s.upBytes),
                     static_cast<unsigned long long>(s.downFrames),
                     static_cast<unsigned long long>(s.downBytes),
                     ul.c_str(),
                     dl.c_str());
        s.upFrames = s.upBytes = s.downFrames = s.downBytes = 0;
    }
}

} // namespace rigemu
