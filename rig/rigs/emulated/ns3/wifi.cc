#include "wifi.h"

#include "layout.h"
#include "tap.h"

#include "ns3/boolean.h"
#include "ns3/frame-exchange-manager.h"
#include "ns3/node-container.h"
#include "ns3/ssid.h"
#include "ns3/sta-wifi-mac.h"
#include "ns3/string.h"
#include "ns3/wifi-helper.h"
#include "ns3/wifi-mac-helper.h"
#include "ns3/yans-wifi-helper.h"

#include <cmath>
#include <stdexcept>

namespace rigemu
{

namespace
{

struct PhySettings
{
    ns3::WifiStandard standard;
    std::string dataMode;    // fixed rate: stations sit close to the AP, as in the lab
    std::string controlMode; // ACK / control frames
};

// The profile's standard / band / width (radio-configs/wifi/*.yaml) as ns-3 settings.
PhySettings
SettingsFor(const std::string& standard, double bandGhz, int width)
{
    bool band24 = bandGhz < 3;
    std::string legacyControl = band24 ? "ErpOfdmRate24Mbps" : "OfdmRate24Mbps";
    if (standard == "g" && band24 && width == 20)
    {
        return {ns3::WIFI_STANDARD_80211g, "ErpOfdmRate54Mbps", "ErpOfdmRate24Mbps"};
    }
    if (standard == "a" && !band24 && width == 20)
    {
        return {ns3::WIFI_STANDARD_80211a, "OfdmRate54Mbps", "OfdmRate24Mbps"};
    }
    if (standard == "n" && (width == 20 || width == 40))
    {
        return {ns3::WIFI_STANDARD_80211n, "HtMcs7", legacyControl};
    }
    if (standard == "ac" && !band24 && (width == 20 || width == 40 || width == 80))
    {
        return {ns3::WIFI_STANDARD_80211ac, width == 20 ? "VhtMcs8" : "VhtMcs9", legacyControl};
    }
    throw std::runtime_error("wifi: unsupported standard/band/width " + standard + "/" +
                             std::to_string(bandGhz) + " GHz/" + std::to_string(width) + " MHz");
}

} // namespace

WifiNetwork::WifiNetwork(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>())
{
    const Json& w = config.At("wifi");
    std::string standard = w.Str("standard");
    double bandGhz = w.Num("band_ghz");
    int width = static_cast<int>(w.Num("width_mhz"));
    PhySettings settings = SettingsFor(standard, bandGhz, width);
    m_dataMode = settings.dataMode;
    int channel = static_cast<int>(w.Num("channel_number")); // the centre, as ns-3 numbers it
    int primary20 = static_cast<int>(w.Num("primary20", 0));

    m_gateway = OpenGatewayTap(config);
    m_edges = OpenStationEdges(config, m_random);

    ns3::NodeContainer apNode(1);
    ns3::NodeContainer staNodes(m_edges.size());
    ns3::YansWifiChannelHelper channelHelper = ns3::YansWifiChannelHelper::Default();
    ns3::YansWifiPhyHelper phy;
    phy.SetChannel(channelHelper.Create());
    std::string bandName = bandGhz < 3 ? "BAND_2_4GHZ" : "BAND_5GHZ";
    phy.Set("ChannelSettings",
            ns3::StringValue("{" + std::to_string(channel) + ", " + std::to_string(width) + ", " +
                             bandName + ", " + std::to_string(primary20) + "}"));
    ns3::WifiHelper wifi;
    wifi.SetStandard(settings.standard);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode",
                                 ns3::StringValue(settings.dataMode),
                                 "ControlMode",
                                 ns3::StringValue(settings.controlMode));
    ns3::WifiMacHelper mac;
    ns3::Ssid ssid(config.Str("name"));
    mac.SetType("ns3::StaWifiMac", "Ssid", ns3::SsidValue(ssid));
    ns3::NetDeviceContainer staDevices = wifi.Install(phy, mac, staNodes);
    mac.SetType("ns3::ApWifiMac", "Ssid", ns3::SsidValue(ssid));
    ns3::NetDeviceContainer apDevices = wifi.Install(phy, mac, apNode);

    PlaceAround(apNode.Get(0), 1.5, staNodes, w.Num("distance_m", 5.0));

    m_ap = ns3::DynamicCast<ns3::WifiNetDevice>(apDevices.Get(0));
    m_ap->SetPromiscReceiveCallback(ns3::MakeCallback(&WifiNetwork::FromAirAtAp, this));
    m_gateway->SetPromiscReceiveCallback(ns3::MakeCallback(&WifiNetwork::FromGateway, this));
    m_retries.assign(m_edges.size(), 0);
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        auto sta = ns3::DynamicCast<ns3::WifiNetDevice>(staDevices.Get(i));
        // The node's MAC is the station's MAC: the device's, and the one its link sends from.
        sta->SetAddress(m_edges[i]->TapMac());
        sta->GetMac()->GetFrameExchangeManager()->SetAddress(m_edges[i]->TapMac());
        sta->SetPromiscReceiveCallback(ns3::MakeCallback(&WifiNetwork::FromAirAtStation, this).Bind(i));
        m_edges[i]->OnFrameFromNode([this, i](Frame frame) { m_edges[i]->Uplink(frame, m_stations[i]); });
        m_stationOfMac[m_edges[i]->TapMac()] = i;
        m_stations.push_back(sta);
        sta->GetRemoteStationManager()->TraceConnectWithoutContext(
            "MacTxDataFailed",
            ns3::MakeCallback(&WifiNetwork::CountRetry, this).Bind(i));
    }
}

bool
WifiNetwork::Ready() const
{
    for (const auto& sta : m_stations)
    {
        if (!ns3::DynamicCast<ns3::StaWifiMac>(sta->GetMac())->IsAssociated())
        {
            return false;
        }
    }
    return true;
}

bool
WifiNetwork::FromGateway(ns3::Ptr<ns3::NetDevice>,
                         ns3::Ptr<const ns3::Packet> packet,
                         uint16_t protocol,
                         const ns3::Address& from,
                         const ns3::Address& to,
                         ns3::NetDevice::PacketType)
{
    m_ap->SendFrom(packet->Copy(), from, to, protocol);
    return true;
}

bool
WifiNetwork::FromAirAtAp(ns3::Ptr<ns3::NetDevice>,
                         ns3::Ptr<const ns3::Packet> packet,
                         uint16_t protocol,
                         const ns3::Address& from,
                         const ns3::Address& to,
                         ns3::NetDevice::PacketType type)
{
    if (type == ns3::NetDevice::PACKET_HOST)
    {
        return true; // addressed to the AP itself: nothing on the wired side wants it
    }
    auto src = ns3::Mac48Address::ConvertFrom(from);
    auto known = m_stationOfMac.find(src);
    if (known != m_stationOfMac.end())
    {
        m_edges[known->second]->CountUp(packet->GetSize() + 14);
    }
    m_gateway->SendFrom(packet->Copy(), from, to, protocol);
    return true;
}

bool
WifiNetwork::FromAirAtStation(size_t station,
                              ns3::Ptr<ns3::NetDevice> device,
                              ns3::Ptr<const ns3::Packet> packet,
                              uint16_t protocol,
                              const ns3::Address& from,
                              const ns3::Address& to,
                              ns3::NetDevice::PacketType type)
{
    auto src = ns3::Mac48Address::ConvertFrom(from);
    if (type == ns3::NetDevice::PACKET_OTHERHOST || src == device->GetAddress())
    {
        return true; // not for this station, or its own broadcast relayed back by the AP
    }
    Frame frame = Frame::Of(packet, from, to, protocol);
    m_edges[station]->Downlink(frame);
    return true;
}

void
WifiNetwork::CountRetry(size_t station, ns3::Mac48Address)
{
    m_retries[station]++;
}

void
WifiNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        std::string extra = ", \"data_mode\": \"" + m_dataMode + "\", \"retries\": " + std::to_string(m_retries[i]) +
                            ", \"associated\": " +
                            (ns3::DynamicCast<ns3::StaWifiMac>(m_stations[i]->GetMac())->IsAssociated()
                                 ? "true"
                                 : "false");
        m_edges[i]->WriteStats(out, unixTime, extra);
        m_retries[i] = 0;
    }
}

} // namespace rigemu
