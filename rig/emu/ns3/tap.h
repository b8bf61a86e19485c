// TAP devices bridged into ns-3 FdNetDevices.
#pragma once

#include "ns3/fd-net-device.h"
#include "ns3/mac48-address.h"
#include "ns3/ptr.h"

#include <string>

namespace rigemu
{

// Opens a non-persistent TAP (IFF_TAP|IFF_NO_PI, no offloads) in the current network namespace.
// It vanishes when the last fd closes, i.e. when this process dies however it dies.
int OpenTap(const std::string& name);

// The hardware address of an interface in this network namespace.
ns3::Mac48Address TapMac(const std::string& name);

// A DIX-mode FdNetDevice on its own node, reading and writing the given TAP fd.
ns3::Ptr<ns3::FdNetDevice> MakeTapDevice(int fd);

} // namespace rigemu
