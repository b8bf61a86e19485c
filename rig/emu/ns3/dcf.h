// kind "dcf": one WiFi BSS as a per-frame 802.11 DCF medium (dcf_medium.h) instead of ns-3's
// WiFi model: the same profile fields as kind "wifi" (standard, band, width), the same air
// time per frame and contention, at a small fraction of the CPU (no PHY reception, no
// per-receiver work). The gateway TAP is the AP's wired side; each station TAP is a station.
#pragma once

#include "dcf_medium.h"
#include "edge.h"
#include "json.h"
#include "network.h"

#include "tap.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rigemu
{

class DcfNetwork : public RadioNetwork
{
  public:
    explicit DcfNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;
    bool HasStation(const std::string& tap) const override { return FindEdge(m_edges, tap) != nullptr; }
    Pipe* StationPipe(const std::string& tap, bool up) override
    {
        StationEdge* edge = FindEdge(m_edges, tap);
        return edge ? edge->ControlPipe(up) : nullptr;
    }

  private:
    bool FromGateway(ns3::Ptr<ns3::NetDevice>,
                     ns3::Ptr<const ns3::Packet> packet,
                     uint16_t protocol,
                     const ns3::Address& from,
                     const ns3::Address& to,
                     ns3::NetDevice::PacketType);
    void FromAir(int from, int to, Frame&& frame);
    // The AP's downlink towards `dst` (a station's MAC; group or unknown: every station).
    void ApSend(Frame frame);

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    ns3::Ptr<TapNetDevice> m_gateway;
    std::vector<std::unique_ptr<StationEdge>> m_edges;
    std::vector<ns3::Ptr<TapNetDevice>> m_ports; // each station's radio (the edge's uplink ends here)
    std::map<ns3::Mac48Address, int> m_nodeOfMac; // station MAC -> medium node (1..N)
    std::unique_ptr<DcfMedium> m_medium;
    std::vector<DcfCounters> m_reported; // per node, as of the last stats line
    double m_reportedBusyS = 0;
};

} // namespace rigemu
