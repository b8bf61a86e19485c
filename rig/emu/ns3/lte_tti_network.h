// kind "lte_tti": the TTI-scheduled LTE cell (lte_tti.h) between station TAPs (the UEs) and
// one gateway TAP, bridged like `links`: frames keep their MAC addresses, stations' frames go
// up the cell to the gateway, the gateway's down to the station whose MAC sent them (learned;
// broadcast and unknown to every UE). Optional impairment pipes on top of the radio per station.
#pragma once

#include "json.h"
#include "lte_tti.h"
#include "network.h"
#include "pipe.h"

#include "tap.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rigemu
{

class LteTtiNetwork : public RadioNetwork
{
  public:
    explicit LteTtiNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;
    bool HasStation(const std::string& tap) const override;
    Pipe* StationPipe(const std::string& tap, bool up) override;

  private:
    struct Station
    {
        std::string tap;
        ns3::Ptr<TapNetDevice> device;
        ns3::Ptr<TapNetDevice> cellPort; // the end of the up impairment pipe: into the cell
        std::unique_ptr<Pipe> up;        // impairments on top of the radio; null: none
        std::unique_ptr<Pipe> down;
        PipeConfig upConfig;
        PipeConfig downConfig;
        uint64_t upFrames = 0;
        uint64_t upBytes = 0;
        uint64_t downFrames = 0;
        uint64_t downBytes = 0;
    };

    bool Receive(ns3::Ptr<ns3::NetDevice> device,
                 ns3::Ptr<const ns3::Packet> packet,
                 uint16_t protocol,
                 const ns3::Address& from,
                 const ns3::Address& to,
                 ns3::NetDevice::PacketType type);
    void FromGateway(Frame frame);
    void FromStation(size_t index, Frame frame);
    void IntoCell(size_t index, Frame frame);              // after the up impairment pipe
    void OutOfCell(size_t index, bool up, Frame frame, ns3::Time enqueued);
    void ToStation(size_t index, Frame frame);             // into the cell's downlink

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    std::unique_ptr<LteTtiCell> m_cell;
    ns3::Ptr<TapNetDevice> m_gateway;
    std::vector<Station> m_stations;
    std::map<ns3::Mac48Address, size_t> m_stationOfMac; // learned from frames stations send
    std::vector<LteTtiCounters> m_reportedUp;
    std::vector<LteTtiCounters> m_reportedDown;
};

} // namespace rigemu
