// kind "wifi": one BSS (an AP and its stations) with 802.11 DCF contention on one channel.
// The gateway TAP is the AP's wired side; each station TAP is one associated station whose
// WiFi MAC address is the TAP's own, so frames keep their addresses end to end.
#pragma once

#include "edge.h"
#include "json.h"
#include "network.h"

#include "tap.h"
#include "ns3/wifi-net-device.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rigemu
{

class WifiNetwork : public RadioNetwork
{
  public:
    explicit WifiNetwork(const Json& config);

    bool Ready() const override;
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
    bool FromAirAtAp(ns3::Ptr<ns3::NetDevice>,
                     ns3::Ptr<const ns3::Packet> packet,
                     uint16_t protocol,
                     const ns3::Address& from,
                     const ns3::Address& to,
                     ns3::NetDevice::PacketType);
    bool FromAirAtStation(size_t station,
                          ns3::Ptr<ns3::NetDevice> device,
                          ns3::Ptr<const ns3::Packet> packet,
                          uint16_t protocol,
                          const ns3::Address& from,
                          const ns3::Address& to,
                          ns3::NetDevice::PacketType);
    void CountTx(size_t station, ns3::Ptr<const ns3::Packet> packet);
    void CountRetry(size_t station, ns3::Mac48Address);

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    ns3::Ptr<TapNetDevice> m_gateway;
    ns3::Ptr<ns3::WifiNetDevice> m_ap;
    std::vector<std::unique_ptr<StationEdge>> m_edges;
    std::vector<ns3::Ptr<ns3::WifiNetDevice>> m_stations;
    std::map<ns3::Mac48Address, size_t> m_stationOfMac;
    std::string m_dataMode; // the fixed PHY rate of data frames, e.g. "HtMcs7"
    std::vector<uint64_t> m_retries; // MAC retransmissions per station in the current second
};

} // namespace rigemu
