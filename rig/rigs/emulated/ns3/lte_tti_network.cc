#include "lte_tti_network.h"

#include <cstdio>
#include <string>

namespace rigemu
{

namespace
{

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
    : StationStar(config)
{
    const Json& cell = config.At("lte_tti");
    std::vector<LteTtiUeRadio> radios;
    Json none;
    none.type = Json::Type::Object;
    for (const auto& edge : m_edges)
    {
        bool own = cell.Has("ues") && cell.At("ues").Has(edge->Tap());
        radios.push_back(LteTtiUeRadio::From(own ? cell.At("ues").At(edge->Tap()) : none, cell));
        edge->KeepControlQueueAtLeast(50);
    }
    m_cell = std::make_unique<LteTtiCell>(
        LteTtiConfig::From(cell),
        std::move(radios),
        [this](size_t ue, bool up, Frame frame, ns3::Time enqueued) { OutOfCell(ue, up, std::move(frame), enqueued); });
    ConnectRadio([this](size_t ue, Frame frame) { m_cell->Enqueue(ue, true, std::move(frame)); });
    m_reportedUp.assign(m_edges.size(), LteTtiCounters());
    m_reportedDown.assign(m_edges.size(), LteTtiCounters());
}

void
LteTtiNetwork::FromStation(size_t index, Frame frame)
{
    Learn(index, frame.src);
    ToRadio(index, std::move(frame));
}

void
LteTtiNetwork::FromGateway(Frame frame)
{
    BridgeFromGateway(std::move(frame), [this](size_t to, Frame f) { ToStation(to, std::move(f)); });
}

void
LteTtiNetwork::OutOfCell(size_t index, bool up, Frame frame, ns3::Time)
{
    if (!up)
    {
        m_edges[index]->Downlink(std::move(frame));
        return;
    }
    // At the eNodeB: to the gateway, or (another UE's MAC, or broadcast) down that UE's downlink.
    m_edges[index]->CountUp(frame.WireBytes());
    BridgeFromStation(
        index,
        std::move(frame),
        [this](size_t to, Frame f) { ToStation(to, std::move(f)); },
        [this](Frame f) { m_gateway->SendFrom(f.packet, f.src, f.dst, f.protocol); });
}

void
LteTtiNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        std::string ul = CellMembers("ul_", m_cell->Counters(i, true), m_reportedUp[i], m_cell->QueuedBytes(i, true));
        std::string dl = CellMembers("dl_", m_cell->Counters(i, false), m_reportedDown[i], m_cell->QueuedBytes(i, false));
        m_edges[i]->WriteStats(out, unixTime, ul + dl);
    }
}

} // namespace rigemu
