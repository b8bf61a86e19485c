#include "tap.h"

#include "realtime.h"

#include "ns3/make-event.h"
#include "ns3/packet.h"

#include "ns3/mac48-address.h"
#include "ns3/node.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rigemu
{

namespace
{

// The calling thread in the network namespace at `path` for this object's lifetime (nothing
// for an empty path); back in the one it was in when destroyed.
class InNetns
{
  public:
    explicit InNetns(const std::string& path)
    {
        if (path.empty())
        {
            return;
        }
        m_home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (m_home < 0)
        {
            throw std::runtime_error(std::string("open /proc/thread-self/ns/net: ") + strerror(errno));
        }
        int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (target < 0 || setns(target, CLONE_NEWNET) < 0)
        {
            int err = errno;
            if (target >= 0)
            {
                close(target);
            }
            close(m_home);
            throw std::runtime_error("network namespace " + path + ": " + strerror(err));
        }
        close(target);
    }

    ~InNetns()
    {
        if (m_home >= 0)
        {
            // Cannot fail for the namespace this thread came from (its fd holds it alive).
            setns(m_home, CLONE_NEWNET);
            close(m_home);
        }
    }

    InNetns(const InNetns&) = delete;
    InNetns& operator=(const InNetns&) = delete;

  private:
    int m_home = -1;
};

// Every TAP fd this process opened, closed side by side when it exits normally: the kernel
// removes a TAP as its last fd closes (~20 ms each, mostly waiting for RCU outside the RTNL
// lock), and closes on several threads overlap those waits where one thread's closes (or the
// kernel's at a kill) queue them one after another.
class OpenTaps
{
  public:
    void Add(int fd) { m_fds.push_back(fd); }

    ~OpenTaps()
    {
        std::vector<std::thread> closers;
        for (int fd : m_fds)
        {
            try
            {
                closers.emplace_back([fd]() { close(fd); });
            }
            catch (const std::system_error&)
            {
                close(fd); // no thread to be had: closed here, in turn
            }
        }
        for (auto& closer : closers)
        {
            closer.join();
        }
    }

  private:
    std::vector<int> m_fds;
};

OpenTaps&
Taps()
{
    static OpenTaps taps;
    return taps;
}

} // namespace

int
OpenTap(const std::string& name, const std::string& netns)
{
    if (name.empty() || name.size() >= IFNAMSIZ)
    {
        throw std::runtime_error("TAP name '" + name + "' must be 1-15 characters");
    }
    // The TAP is created in the namespace current at TUNSETIFF and stays there; the fd works
    // from any namespace.
    InNetns in(netns);
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
    {
        throw std::runtime_error(std::string("open /dev/net/tun: ") + strerror(errno));
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
    {
        int err = errno;
        close(fd);
        throw std::runtime_error("TUNSETIFF " + name + (netns.empty() ? "" : " in " + netns) + ": " + strerror(err));
    }
    // No TSO/GSO/UFO: the kernel segments before handing frames over, so every frame fits the MTU.
    if (ioctl(fd, TUNSETOFFLOAD, 0) < 0)
    {
        int err = errno;
        close(fd);
        throw std::runtime_error("TUNSETOFFLOAD " + name + ": " + strerror(err));
    }
    Taps().Add(fd);
    return fd;
}

ns3::Mac48Address
TapMac(const std::string& name, const std::string& netns)
{
    InNetns in(netns);
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    int rc = sock < 0 ? -1 : ioctl(sock, SIOCGIFHWADDR, &ifr);
    int err = errno;
    if (sock >= 0)
    {
        close(sock);
    }
    if (rc < 0)
    {
        throw std::runtime_error("SIOCGIFHWADDR " + name + (netns.empty() ? "" : " in " + netns) + ": " + strerror(err));
    }
    ns3::Mac48Address mac;
    mac.CopyFrom(reinterpret_cast<const uint8_t*>(ifr.ifr_hwaddr.sa_data));
    return mac;
}

NS_OBJECT_ENSURE_REGISTERED(TapNetDevice);

namespace
{

constexpr size_t kEthernetHeader = 14;
constexpr int kFramesPerWakeup = 64; // bounds one TAP's share of a wake-up; the rest waits a turn

} // namespace

ns3::TypeId
TapNetDevice::GetTypeId()
{
    static ns3::TypeId tid =
        ns3::TypeId("rigemu::TapNetDevice").SetParent<ns3::NetDevice>().SetGroupName("Network").AddConstructor<TapNetDevice>();
    return tid;
}

TapNetDevice::~TapNetDevice()
{
    // The fd stays open: OpenTap's fds are closed together as the process exits (OpenTaps).
}

void
TapNetDevice::DoDispose()
{
    m_node = nullptr;
    m_rx = ReceiveCallback();
    m_promiscRx = PromiscReceiveCallback();
    NetDevice::DoDispose();
}

void
TapNetDevice::Attach(int fd)
{
    m_fd = fd;
    PollingRealtimeSimulatorImpl::Get().Watch(fd, [this]() { ReadFrames(); });
}

bool
TapNetDevice::SetMtu(const uint16_t mtu)
{
    m_mtu = mtu;
    return true;
}

ns3::Address
TapNetDevice::GetMulticast(ns3::Ipv4Address group) const
{
    return ns3::Mac48Address::GetMulticast(group);
}

ns3::Address
TapNetDevice::GetMulticast(ns3::Ipv6Address group) const
{
    return ns3::Mac48Address::GetMulticast(group);
}

void
TapNetDevice::ReadFrames()
{
    auto& simulator = PollingRealtimeSimulatorImpl::Get();
    uint32_t context = m_node ? m_node->GetId() : 0;
    uint8_t buffer[65536];
    for (int i = 0; i < kFramesPerWakeup; ++i)
    {
        ssize_t n = read(m_fd, buffer, sizeof(buffer));
        if (n < static_cast<ssize_t>(kEthernetHeader))
        {
            if (n < 0)
            {
                return; // EAGAIN: drained
            }
            continue; // a runt: nothing to forward
        }
        auto frame = ns3::Create<ns3::Packet>(buffer, static_cast<uint32_t>(n));
        simulator.ScheduleWallClockNow(context, ns3::MakeEvent(&TapNetDevice::Deliver, this, frame));
    }
}

void
TapNetDevice::Deliver(ns3::Ptr<ns3::Packet> frame)
{
    uint8_t header[kEthernetHeader];
    frame->CopyData(header, kEthernetHeader);
    frame->RemoveAtStart(kEthernetHeader);
    ns3::Mac48Address dst;
    ns3::Mac48Address src;
    dst.CopyFrom(header);
    src.CopyFrom(header + 6);
    uint16_t protocol = static_cast<uint16_t>(header[12] << 8 | header[13]);
    PacketType type = dst.IsBroadcast() ? PACKET_BROADCAST
                      : dst.IsGroup()   ? PACKET_MULTICAST
                      : dst == m_address ? PACKET_HOST
                                         : PACKET_OTHERHOST;
    if (!m_promiscRx.IsNull())
    {
        m_promiscRx(this, frame, protocol, src, dst, type);
    }
    if (type != PACKET_OTHERHOST && !m_rx.IsNull())
    {
        m_rx(this, frame, protocol, src);
    }
}

bool
TapNetDevice::Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest, uint16_t protocol)
{
    return SendFrom(packet, m_address, dest, protocol);
}

bool
TapNetDevice::SendFrom(ns3::Ptr<ns3::Packet> packet,
                       const ns3::Address& source,
                       const ns3::Address& dest,
                       uint16_t protocol)
{
    uint32_t size = packet->GetSize();
    if (size > m_mtu || m_fd < 0)
    {
        return false;
    }
    uint8_t buffer[kEthernetHeader + 65536];
    ns3::Mac48Address::ConvertFrom(dest).CopyTo(buffer);
    ns3::Mac48Address::ConvertFrom(source).CopyTo(buffer + 6);
    buffer[12] = static_cast<uint8_t>(protocol >> 8);
    buffer[13] = static_cast<uint8_t>(protocol & 0xff);
    packet->CopyData(buffer + kEthernetHeader, size);
    // A TAP takes a frame whole or not at all (down interface, no memory): a drop, like a wire's.
    return write(m_fd, buffer, kEthernetHeader + size) == static_cast<ssize_t>(kEthernetHeader + size);
}

ns3::Ptr<TapNetDevice>
MakeTapDevice(int fd)
{
    auto node = ns3::CreateObject<ns3::Node>();
    auto device = ns3::CreateObject<TapNetDevice>();
    device->SetAddress(ns3::Mac48Address::Allocate());
    node->AddDevice(device);
    device->Attach(fd);
    return device;
}

} // namespace rigemu
