// A layer-2 station star: one gateway TAP and one TAP per station (a StationEdge: the TAP and
// its impairment pipes), bridged so that frames keep their MAC addresses. Kinds links, dcf and
// lte_tti build on it: the star opens the TAPs, hands every frame a node sends to FromGateway /
// FromStation, knows which station has which MAC and where a frame goes (Bridge*); the kind
// carries the frame there through its own medium.
#pragma once

#include "edge.h"
#include "json.h"
#include "network.h"
#include "pipe.h"

#include "tap.h"

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rigemu
{

class StationStar : public RadioNetwork
{
  public:
    bool HasStation(const std::string& tap) const override { return FindEdge(m_edges, tap) != nullptr; }

    Pipe* StationPipe(const std::string& tap, bool up) override
    {
        StationEdge* edge = FindEdge(m_edges, tap);
        return edge ? edge->ControlPipe(up) : nullptr;
    }

  protected:
    // Opens the gateway TAP ("gateway_tap") and every station's ("stations").
    explicit StationStar(const Json& config);

    // Every frame a node sends on the gateway TAP, or on the TAP of station `station`.
    virtual void FromGateway(Frame frame) = 0;
    virtual void FromStation(size_t station, Frame frame) = 0;

    // Station `station` has `mac` (group addresses are ignored).
    void Learn(size_t station, ns3::Mac48Address mac);
    // The station a frame to `dst` is for; none for group addresses and MACs not learned.
    std::optional<size_t> StationOf(ns3::Mac48Address dst) const;

    // A frame from the gateway goes to the station of its destination; a group or unknown
    // destination to every station, each with its own copy.
    template <typename ToStation>
    void BridgeFromGateway(Frame frame, ToStation toStation);

    // A frame from station `from` (at the hub) goes to the station of its destination, never back
    // to `from`; any other to the gateway, and a group one also to every other station.
    template <typename ToStation, typename ToGateway>
    void BridgeFromStation(size_t from, Frame frame, ToStation toStation, ToGateway toGateway);

    // A station's radio: ToRadio sends a frame through the station's up impairment pipe (if
    // any), then to `intoRadio`.
    void ConnectRadio(std::function<void(size_t station, Frame frame)> intoRadio);
    void ToRadio(size_t station, Frame frame) { m_edges[station]->Uplink(std::move(frame), m_ports[station]); }

    // Every copy of a fanned-out frame owns its payload.
    static Frame CopyOf(const Frame& frame)
    {
        Frame copy = frame;
        copy.packet = frame.packet->Copy();
        return copy;
    }

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    ns3::Ptr<TapNetDevice> m_gateway;
    std::vector<std::unique_ptr<StationEdge>> m_edges; // station i's TAP and impairment pipes

  private:
    bool ReceiveAtGateway(ns3::Ptr<ns3::NetDevice>,
                          ns3::Ptr<const ns3::Packet> packet,
                          uint16_t protocol,
                          const ns3::Address& from,
                          const ns3::Address& to,
                          ns3::NetDevice::PacketType);

    std::map<ns3::Mac48Address, size_t> m_stationOfMac;
    std::vector<ns3::Ptr<ns3::NetDevice>> m_ports; // where station i's uplink enters its radio
};

// Appends `, "<prefix><name>": <value>` per member to a stats line (the kinds' per-second counters).
void WriteMembers(std::FILE* out,
                  const char* prefix,
                  std::initializer_list<std::pair<const char*, unsigned long long>> members);

// A device that hands every frame sent to it to a function: the end of a route of pipes that
// leads into a model inside the emulator, not out to a TAP.
class FramePort : public TapNetDevice
{
  public:
    explicit FramePort(std::function<void(Frame)> into)
        : m_into(std::move(into))
    {
    }

    bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest, uint16_t protocol) override
    {
        return SendFrom(packet, GetAddress(), dest, protocol);
    }

    bool SendFrom(ns3::Ptr<ns3::Packet> packet,
                  const ns3::Address& source,
                  const ns3::Address& dest,
                  uint16_t protocol) override;

  private:
    std::function<void(Frame)> m_into;
};

template <typename ToStation>
void
StationStar::BridgeFromGateway(Frame frame, ToStation toStation)
{
    if (std::optional<size_t> to = StationOf(frame.dst))
    {
        toStation(*to, std::move(frame));
        return;
    }
    for (size_t j = 0; j < m_edges.size(); ++j)
    {
        toStation(j, CopyOf(frame));
    }
}

template <typename ToStation, typename ToGateway>
void
StationStar::BridgeFromStation(size_t from, Frame frame, ToStation toStation, ToGateway toGateway)
{
    if (std::optional<size_t> to = StationOf(frame.dst))
    {
        if (*to != from)
        {
            toStation(*to, std::move(frame));
        }
        return;
    }
    if (!frame.dst.IsGroup())
    {
        toGateway(std::move(frame));
        return;
    }
    toGateway(CopyOf(frame));
    for (size_t j = 0; j < m_edges.size(); ++j)
    {
        if (j != from)
        {
            toStation(j, CopyOf(frame));
        }
    }
}

} // namespace rigemu
