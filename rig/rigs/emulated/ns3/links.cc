#include "links.h"

namespace rigemu
{

namespace
{

// Per-second deltas of one pipe's counters, as JSON members with a prefix ("up_", "down_").
void
WriteDelta(std::FILE* out, const char* prefix, const Pipe& pipe, PipeCounters& reported)
{
    const PipeCounters& now = pipe.Counters();
    WriteMembers(out,
                 prefix,
                 {{"frames", now.frames - reported.frames},
                  {"bytes", now.bytes - reported.bytes},
                  {"queue_drops", now.queueDrops - reported.queueDrops},
                  {"loss_drops", now.lossDrops - reported.lossDrops},
                  {"tap_drops", now.tapDrops - reported.tapDrops},
                  {"queue", pipe.QueueLength()}});
    reported = now;
}

} // namespace

LinksNetwork::LinksNetwork(const Json& config)
    : StationStar(config)
{
    if (config.Has("medium") && config.At("medium").Num("rate_bps") > 0)
    {
        PipeConfig medium;
        medium.rateBps = config.At("medium").Num("rate_bps");
        medium.queuePackets = static_cast<uint32_t>(config.At("medium").Num("queue_packets"));
        m_medium = std::make_unique<Pipe>(medium, m_random);
    }
    for (const auto& edge : m_edges)
    {
        m_links.push_back(Link{edge->ControlPipe(true), edge->ControlPipe(false), {}, {}});
    }
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
    frame.Forward();
}

void
LinksNetwork::FromGateway(Frame frame)
{
    BridgeFromGateway(std::move(frame), [this](size_t to, Frame f) {
        Send(std::move(f), {m_medium.get(), m_links[to].down}, m_edges[to]->Device());
    });
}

void
LinksNetwork::FromStation(size_t index, Frame frame)
{
    Learn(index, frame.src);
    // The whole route is set here: relayed through the AP, a frame crosses the medium twice.
    Pipe* up = m_links[index].up;
    BridgeFromStation(
        index,
        std::move(frame),
        [this, up](size_t to, Frame f) {
            Send(std::move(f), {m_medium.get(), up, m_medium.get(), m_links[to].down}, m_edges[to]->Device());
        },
        [this, up](Frame f) { Send(std::move(f), {m_medium.get(), up}, m_gateway); });
}

void
LinksNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_links.size(); ++i)
    {
        Link& link = m_links[i];
        std::fprintf(out, "{\"t\": %.3f, \"station\": \"%s\"", unixTime, m_edges[i]->Tap().c_str());
        WriteDelta(out, "up_", *link.up, link.upReported);
        WriteDelta(out, "down_", *link.down, link.downReported);
        std::fprintf(out, "}\n");
    }
    if (m_medium)
    {
        std::fprintf(out, "{\"t\": %.3f", unixTime);
        WriteDelta(out, "medium_", *m_medium, m_mediumReported);
        std::fprintf(out, "}\n");
    }
}

} // namespace rigemu
