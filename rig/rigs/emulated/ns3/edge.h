// The edge of a radio network (every kind; links, dcf and lte_tti through station_star.h): a
// station's TAP, bridged to its radio device through optional impairment pipes (rate, delay,
// jitter, loss on top of the radio, seed 003).
#pragma once

#include "json.h"
#include "pipe.h"

#include "tap.h"
#include "ns3/mac48-address.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rigemu
{

struct EdgeCounters
{
    uint64_t upFrames = 0;
    uint64_t upBytes = 0;
    uint64_t downFrames = 0;
    uint64_t downBytes = 0;
};

class StationEdge
{
  public:
    StationEdge(const Json& station, ns3::Ptr<ns3::UniformRandomVariable> random);

    const std::string& Tap() const { return m_tap; }

    ns3::Ptr<TapNetDevice> Device() const { return m_device; }

    // The MAC the TAP had when it was opened (the node's interface's).
    ns3::Mac48Address TapMac() const { return m_tapMac; }

    // Calls `handler` with every frame the node sends on its TAP.
    void OnFrameFromNode(std::function<void(Frame)> handler);

    // A frame the node sent, towards its radio device `radio` (through the up pipe, if any).
    void Uplink(Frame frame, ns3::Ptr<ns3::NetDevice> radio);
    // A frame the radio delivered, towards the node (through the down pipe, if any).
    void Downlink(Frame frame);

    // The up or down impairment pipe for a runtime change; made (passing frames unchanged
    // until changed) if the config had none, so an unimpaired station costs nothing per frame.
    Pipe* ControlPipe(bool up);
    // Pipes ControlPipe makes hold at least `packets` frames, whatever the config says (lte_tti).
    void KeepControlQueueAtLeast(uint32_t packets)
    {
        m_upConfig.queuePackets = std::max(m_upConfig.queuePackets, packets);
        m_downConfig.queuePackets = std::max(m_downConfig.queuePackets, packets);
    }

    // Radio-side counters: frames the radio carried for this station in the last second.
    void CountUp(uint32_t bytes);

    // {"t", "station", "up_frames", "up_bytes", "down_frames", "down_bytes" + extra members}
    void WriteStats(std::FILE* out, double unixTime, const std::string& extraMembers);

  private:
    bool Receive(ns3::Ptr<ns3::NetDevice>,
                 ns3::Ptr<const ns3::Packet> packet,
                 uint16_t protocol,
                 const ns3::Address& from,
                 const ns3::Address& to,
                 ns3::NetDevice::PacketType);

    std::string m_tap;
    std::function<void(Frame)> m_fromNode;
    ns3::Ptr<TapNetDevice> m_device;
    ns3::Mac48Address m_tapMac;
    std::unique_ptr<Pipe> m_up;   // null: no impairment on top of the radio
    std::unique_ptr<Pipe> m_down;
    PipeConfig m_upConfig; // what ControlPipe starts a missing pipe from (its queue limit)
    PipeConfig m_downConfig;
    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    EdgeCounters m_counters;
};

// The gateway's TAP: "gateway_ifname" in the namespace "gateway_netns" when the config gives
// them, else "gateway_tap" in this process's namespace.
ns3::Ptr<TapNetDevice> OpenGatewayTap(const Json& config);

// Opens every station of the config ("stations": [{"tap", "up", "down", optional "ifname" and
// "netns": where the TAP is opened, else under the name "tap" in this process's namespace}]).
std::vector<std::unique_ptr<StationEdge>> OpenStationEdges(const Json& config,
                                                           ns3::Ptr<ns3::UniformRandomVariable> random);

// The edge of `tap` among `edges`, or null.
StationEdge* FindEdge(const std::vector<std::unique_ptr<StationEdge>>& edges, const std::string& tap);

// Pipe settings from the config; null when the pipe would do nothing (rate 0, no delay/loss).
std::unique_ptr<Pipe> MakePipe(const Json& pipe, ns3::Ptr<ns3::UniformRandomVariable> random);

} // namespace rigemu
