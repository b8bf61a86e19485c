#include "dcf.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace rigemu
{

namespace
{

void
WriteNodeCounters(std::FILE* out, const char* prefix, const DcfCounters& now, DcfCounters& reported, size_t queue)
{
    WriteMembers(out,
                 prefix,
                 {{"collisions", now.collisions - reported.collisions},
                  {"retries", now.retries - reported.retries},
                  {"retry_drops", now.retryDrops - reported.retryDrops},
                  {"queue_drops", now.queueDrops - reported.queueDrops},
                  {"expired", now.expired - reported.expired},
                  {"queue", queue}});
    reported = now;
}

} // namespace

DcfNetwork::DcfNetwork(const Json& config)
    : StationStar(config)
{
    const Json& w = config.At("wifi");
    DcfPhy phy = DcfPhyFor(w.Str("standard"), w.Num("band_ghz"), static_cast<int>(w.Num("width_mhz")));
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
        Learn(i, m_edges[i]->TapMac()); // an AP knows its associated stations
    }
    ConnectRadio([this](size_t station, Frame frame) {
        m_medium->Enqueue(static_cast<int>(station) + 1, DcfMedium::kAp, std::move(frame));
    });
}

void
DcfNetwork::ApSend(Frame frame)
{
    std::optional<size_t> station = StationOf(frame.dst);
    int to = station ? static_cast<int>(*station) + 1 : -1;
    m_medium->Enqueue(DcfMedium::kAp, to, std::move(frame));
}

void
DcfNetwork::FromAir(int from, int to, Frame&& frame)
{
    if (from != DcfMedium::kAp)
    {
        // At the AP: the wired side, and back over the air for other stations (an AP relays;
        // a group frame goes over the air once, to every station but its sender).
        m_edges[from - 1]->CountUp(frame.WireBytes());
        std::optional<size_t> station = StationOf(frame.dst);
        if (!station)
        {
            frame.out = m_gateway;
            frame.nHops = frame.next = 0;
            Frame wired = CopyOf(frame);
            wired.Forward();
        }
        if (station ? static_cast<int>(*station) + 1 != from : frame.dst.IsGroup())
        {
            ApSend(std::move(frame));
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
            m_edges[i]->Downlink(CopyOf(frame));
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
