#include "tap.h"

#include "ns3/mac48-address.h"
#include "ns3/node.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rigemu
{

int
OpenTap(const std::string& name)
{
    if (name.empty() || name.size() >= IFNAMSIZ)
    {
        throw std::runtime_error("TAP name '" + name + "' must be 1-15 characters");
    }
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
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
        throw std::runtime_error("TUNSETIFF " + name + ": " + strerror(err));
    }
    // No TSO/GSO/UFO: the kernel segments before handing frames over, so every frame fits the MTU.
    if (ioctl(fd, TUNSETOFFLOAD, 0) < 0)
    {
        int err = errno;
        close(fd);
        throw std::runtime_error("TUNSETOFFLOAD " + name + ": " + strerror(err));
    }
    return fd;
}

ns3::Mac48Address
TapMac(const std::string& name)
{
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
        throw std::runtime_error("SIOCGIFHWADDR " + name + ": " + strerror(err));
    }
    ns3::Mac48Address mac;
    mac.CopyFrom(reinterpret_cast<const uint8_t*>(ifr.ifr_hwaddr.sa_data));
    return mac;
}

ns3::Ptr<ns3::FdNetDevice>
MakeTapDevice(int fd)
{
    auto node = ns3::CreateObject<ns3::Node>();
    auto device = ns3::CreateObject<ns3::FdNetDevice>();
    // The device's own MAC never appears on the wire: frames keep their original addresses.
    device->SetAddress(ns3::Mac48Address::Allocate());
    device->SetEncapsulationMode(ns3::FdNetDevice::DIX);
    device->SetFileDescriptor(fd);
    node->AddDevice(device);
    return device;
}

} // namespace rigemu
