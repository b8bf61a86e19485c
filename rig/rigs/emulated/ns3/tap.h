// TAP devices bridged into ns-3: a NetDevice that reads and writes raw Ethernet frames on a TAP.
#pragma once

#include "ns3/mac48-address.h"
#include "ns3/channel.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/ptr.h"

#include <string>

namespace rigemu
{

// Opens a non-persistent TAP (IFF_TAP|IFF_NO_PI, no offloads, non-blocking) named `name` in
// the network namespace at `netns` (a path such as /run/netns/<name>; empty: this process's
// own), where it then stays: nothing needs to move it. Frames written to it are taken through
// the host's stack on a kernel thread of its own (threaded NAPI, SCHED_FIFO one step below a
// SCHED_FIFO caller), not inside the write. A name already in use there fails ("File
// exists"). The calling thread enters that namespace and returns to its own before this
// returns; call it before other threads start. The fd is closed when the process exits (all
// TAPs side by side on a normal exit), and the TAP vanishes with it, however the process dies.
int OpenTap(const std::string& name, const std::string& netns = "");

// The hardware address of interface `name` in the network namespace at `netns` (empty: this
// process's own).
ns3::Mac48Address TapMac(const std::string& name, const std::string& netns = "");

// An Ethernet (DIX) device on a TAP fd, driven by the PollingRealtimeSimulatorImpl's loop: no
// reader thread, every frame waiting on the TAP is read when the loop wakes. Frames keep their
// addresses: SendFrom writes the given source MAC; the device's own MAC matters only for
// telling PACKET_HOST from PACKET_OTHERHOST.
class TapNetDevice : public ns3::NetDevice
{
  public:
    static ns3::TypeId GetTypeId();

    TapNetDevice() = default;
    ~TapNetDevice() override;

    // Starts reading `fd` (an OpenTap fd: closed at the process's exit, not by the device).
    void Attach(int fd);

    void SetIfIndex(const uint32_t index) override { m_ifIndex = index; }
    uint32_t GetIfIndex() const override { return m_ifIndex; }
    ns3::Ptr<ns3::Channel> GetChannel() const override { return nullptr; }
    void SetAddress(ns3::Address address) override { m_address = ns3::Mac48Address::ConvertFrom(address); }
    ns3::Address GetAddress() const override { return m_address; }
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override { return m_mtu; }
    bool IsLinkUp() const override { return true; }
    void AddLinkChangeCallback(ns3::Callback<void>) override {}
    bool IsBroadcast() const override { return true; }
    ns3::Address GetBroadcast() const override { return ns3::Mac48Address::GetBroadcast(); }
    bool IsMulticast() const override { return true; }
    ns3::Address GetMulticast(ns3::Ipv4Address group) const override;
    ns3::Address GetMulticast(ns3::Ipv6Address group) const override;
    bool IsBridge() const override { return false; }
    bool IsPointToPoint() const override { return false; }
    bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest, uint16_t protocol) override;
    bool SendFrom(ns3::Ptr<ns3::Packet> packet,
                  const ns3::Address& source,
                  const ns3::Address& dest,
                  uint16_t protocol) override;
    ns3::Ptr<ns3::Node> GetNode() const override { return m_node; }
    void SetNode(ns3::Ptr<ns3::Node> node) override { m_node = node; }
    bool NeedsArp() const override { return true; }
    void SetReceiveCallback(ReceiveCallback cb) override { m_rx = cb; }
    void SetPromiscReceiveCallback(PromiscReceiveCallback cb) override { m_promiscRx = cb; }
    bool SupportsSendFrom() const override { return true; }

  private:
    void DoDispose() override;
    void ReadFrames();
    void Deliver(ns3::Ptr<ns3::Packet> frame);

    int m_fd = -1;
    ns3::Ptr<ns3::Node> m_node;
    uint32_t m_ifIndex = 0;
    ns3::Mac48Address m_address;
    uint16_t m_mtu = 1500;
    ReceiveCallback m_rx;
    PromiscReceiveCallback m_promiscRx;
};

// A TapNetDevice on its own node, reading and writing the given TAP fd.
ns3::Ptr<TapNetDevice> MakeTapDevice(int fd);

} // namespace rigemu
