#include "tap.h"

#include "realtime.h"

#include "ns3/make-event.h"
#include "ns3/packet.h"

#include "ns3/mac48-address.h"
#include "ns3/node.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

// ioctl `request` about interface `ifname` of the calling thread's network namespace, through
// a socket there; `ifr` gives the rest and takes the answer. Returns 0 or an errno.
int
InterfaceIoctl(const std::string& ifname, unsigned long request, ifreq& ifr)
{
    strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int rc = sock < 0 ? -1 : ioctl(sock, request, &ifr);
    int err = errno;
    if (sock >= 0)
    {
        close(sock);
    }
    return rc < 0 ? err : 0;
}

// Turns on threaded NAPI for interface `ifname` of the calling thread's network namespace:
// writes 1 to its sysfs `threaded`, from a child process that mounts a sysfs of that namespace
// (as `ip netns exec` does). Returns 0 or an errno.
int
EnableThreadedNapi(const std::string& ifname)
{
    std::string path = "/sys/class/net/" + ifname + "/threaded"; // built before fork: no malloc after
    pid_t child = fork();
    if (child < 0)
    {
        return errno;
    }
    if (child == 0)
    {
        // The sysfs there may be this namespace's already (`ip netns exec`): mounting that one
        // again on the same place fails (EBUSY), so the old one goes first, in this child only.
        if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0 ||
            (umount2("/sys", MNT_DETACH) < 0 && errno != EINVAL) || mount("sysfs", "/sys", "sysfs", 0, nullptr) < 0)
        {
            _exit(errno);
        }
        int fd = open(path.c_str(), O_WRONLY);
        if (fd < 0 || write(fd, "1", 1) != 1)
        {
            _exit(errno);
        }
        _exit(0);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

// The kernel thread of a threaded NAPI instance of interface `ifname` ("napi/<ifname>-<id>"),
// or -1. A thread's name keeps 15 characters: `ifname` must be short enough to stay whole.
pid_t
NapiThread(const std::string& ifname)
{
    std::string prefix = "napi/" + ifname + "-";
    pid_t found = -1;
    DIR* proc = opendir("/proc");
    while (proc && found < 0)
    {
        dirent* entry = readdir(proc);
        if (!entry)
        {
            break;
        }
        char comm[32] = {};
        std::string file = std::string("/proc/") + entry->d_name + "/comm";
        FILE* f = entry->d_name[0] >= '1' && entry->d_name[0] <= '9' ? std::fopen(file.c_str(), "r") : nullptr;
        if (f)
        {
            if (std::fgets(comm, sizeof(comm), f) && std::strncmp(comm, prefix.c_str(), prefix.size()) == 0)
            {
                found = static_cast<pid_t>(std::atoi(entry->d_name));
            }
            std::fclose(f);
        }
    }
    if (proc)
    {
        closedir(proc);
    }
    return found;
}

// Frames written to a TAP opened with IFF_NAPI queue on its NAPI instance; threaded, that runs
// in a kernel thread of its own, which takes the receiving host's stack (GRO included) off the
// emulator's thread: a write() costs a queue and a wake-up, not the host's processing, and the
// emulator's clock no longer waits for it. The thread runs SCHED_FIFO one step below the
// emulator (when the emulator is SCHED_FIFO), so the hosts' receive work still comes before
// their tasks, as softirq work does on a real host. The TAP is made under a name of its own
// first (the thread is named after it) and renamed once its thread is found.
void
ThreadedNapi(const std::string& tempName, const std::string& name)
{
    if (int err = EnableThreadedNapi(tempName))
    {
        throw std::runtime_error("threaded NAPI for TAP " + name + ": " + strerror(err));
    }
    sched_param own{};
    if (sched_getscheduler(0) == SCHED_FIFO && sched_getparam(0, &own) == 0 && own.sched_priority > 1)
    {
        pid_t thread = NapiThread(tempName);
        sched_param param{};
        param.sched_priority = own.sched_priority - 1;
        if (thread < 0 || sched_setscheduler(thread, SCHED_FIFO, &param) < 0)
        {
            throw std::runtime_error("SCHED_FIFO for the NAPI thread of TAP " + name + ": " +
                                     (thread < 0 ? "no such thread" : strerror(errno)));
        }
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strncpy(ifr.ifr_newname, name.c_str(), IFNAMSIZ - 1);
    if (int err = InterfaceIoctl(tempName, SIOCSIFNAME, ifr))
    {
        throw std::runtime_error("TAP " + name + ": " + strerror(err)); // EEXIST: the name is taken
    }
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
    // Its own name first, unique on the host for as long as this process lives (pid, count;
    // 8 characters, so that its NAPI thread's name keeps it whole): ThreadedNapi.
    static unsigned opened = 0;
    char tempName[IFNAMSIZ];
    std::snprintf(tempName, sizeof(tempName), "e%05u%02u", static_cast<unsigned>(getpid()) % 100000u, opened++ % 100u);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_NAPI;
    strncpy(ifr.ifr_name, tempName, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
    {
        int err = errno;
        close(fd);
        throw std::runtime_error("TUNSETIFF " + name + (netns.empty() ? "" : " in " + netns) + ": " + strerror(err));
    }
    try
    {
        ThreadedNapi(tempName, name);
    }
    catch (const std::exception&)
    {
        close(fd);
        throw;
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
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    if (int err = InterfaceIoctl(name, SIOCGIFHWADDR, ifr))
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
