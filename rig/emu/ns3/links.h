// kind "links": a star of per-station pipes between one gateway TAP and N station TAPs,
// optionally behind one shared medium server (a crude half-duplex channel).
#pragma once

#include "json.h"
#include "network.h"
#include "pipe.h"

#include "tap.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rigemu
{

class LinksNetwork : public RadioNetwork
{
  public:
    explicit LinksNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;
    bool HasStation(const std::string& tap) const override;
    Pipe* StationPipe(const std::string& tap, bool up) override;

  private:
    struct Station
    {
        std::string tap;
        ns3::Ptr<TapNetDevice> device;
        std::unique_ptr<Pipe> up;
        std::unique_ptr<Pipe> down;
        PipeCounters upReported;
        PipeCounters downReported;
    };

    bool Receive(ns3::Ptr<ns3::NetDevice> device,
                 ns3::Ptr<const ns3::Packet> packet,
                 uint16_t protocol,
                 const ns3::Address& from,
                 const ns3::Address& to,
                 ns3::NetDevice::PacketType type);
    void FromGateway(Frame frame);
    void FromStation(size_t index, Frame frame);
    void Send(Frame frame, std::initializer_list<Pipe*> route, ns3::Ptr<ns3::NetDevice> out);

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    std::unique_ptr<Pipe> m_medium; // null when the network has no shared medium
    PipeCounters m_mediumReported;
    ns3::Ptr<TapNetDevice> m_gateway;
    std::vector<Station> m_stations;
    std::map<ns3::Mac48Address, size_t> m_stationOfMac; // learned from frames stations send
};

} // namespace rigemu
