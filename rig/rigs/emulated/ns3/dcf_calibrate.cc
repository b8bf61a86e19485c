#include "dcf_calibrate.h"

#include "dcf_medium.h"
#include "json.h"
#include "layout.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/node-container.h"
#include "ns3/qos-txop.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/ssid.h"
#include "ns3/sta-wifi-mac.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "ns3/wifi-helper.h"
#include "ns3/wifi-mac-helper.h"
#include "ns3/wifi-net-device.h"
#include "ns3/wifi-phy-state-helper.h"
#include "ns3/wifi-phy.h"
#include "ns3/wifi-psdu.h"
#include "ns3/yans-wifi-helper.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace rigemu
{

namespace
{

struct Scenario
{
    std::string model; // "ns3" | "dcf"
    std::string standard;
    double bandGhz = 5;
    int width = 20;
    int channel = 36;
    int primary20 = 0;
    int stations = 1;
    uint32_t packetBytes = 1500; // Ethernet payload (an IP packet)
    double upBps = 0;            // offered per station, towards the AP
    double downBps = 0;          // offered by the AP to each station
    bool poisson = false;        // exponential gaps instead of constant ones
    double startS = 1.0;         // traffic starts (ns-3: after association)
    double warmupS = 1.0;        // then measuring starts
    double durationS = 5.0;
    double distanceM = 5.0;
    bool explicitBar = true; // ns-3's QosTxop::UseExplicitBarAfterMissedBlockAck
};

// Counts what arrives in the measuring window; packets carry their send time and source.
struct Sink
{
    double from = 0, until = 0;
    std::vector<uint64_t> bytes; // per station
    std::vector<double> delaysMs;
    uint64_t frames = 0;

    void Receive(ns3::Ptr<const ns3::Packet> packet)
    {
        double now = ns3::Simulator::Now().GetSeconds();
        if (now < from || now >= until || packet->GetSize() < 10)
        {
            return;
        }
        uint8_t head[10];
        packet->CopyData(head, 10);
        int64_t sentNs;
        uint16_t station;
        std::memcpy(&sentNs, head, 8);
        std::memcpy(&station, head + 8, 2);
        if (station < bytes.size())
        {
            bytes[station] += packet->GetSize();
        }
        frames++;
        delaysMs.push_back((now * 1e9 - sentNs) / 1e6);
    }
};

ns3::Ptr<ns3::Packet>
Stamped(uint32_t size, uint16_t station)
{
    std::vector<uint8_t> buffer(size, 0);
    int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    std::memcpy(buffer.data(), &now, 8);
    std::memcpy(buffer.data() + 8, &station, 2);
    return ns3::Create<ns3::Packet>(buffer.data(), size);
}

// Calls `send(station)` at the offered rate from `start` on (constant or exponential gaps).
void
Generate(const Scenario& sc, double bps, uint16_t station, std::function<void(uint16_t)> send)
{
    if (bps <= 0)
    {
        return;
    }
    double gap = sc.packetBytes * 8.0 / bps;
    auto exp = ns3::CreateObject<ns3::ExponentialRandomVariable>();
    exp->SetAttribute("Mean", ns3::DoubleValue(gap));
    auto uni = ns3::CreateObject<ns3::UniformRandomVariable>();
    double end = sc.startS + sc.warmupS + sc.durationS;
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [=, &sc]() {
        send(station);
        double next = sc.poisson ? exp->GetValue() : gap;
        if (ns3::Simulator::Now().GetSeconds() + next < end)
        {
            ns3::Simulator::Schedule(ns3::Seconds(next), *tick);
        }
    };
    ns3::Simulator::Schedule(ns3::Seconds(sc.startS + uni->GetValue(0, gap)), *tick);
}

std::string
Percentiles(std::vector<double> v)
{
    if (v.empty())
    {
        return "null";
    }
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
    char out[160];
    std::snprintf(out, sizeof(out), "{\"p10\": %.4f, \"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f}", at(0.1), at(0.5),
                  at(0.9), at(0.99));
    return out;
}

std::string
BytesList(const std::vector<uint64_t>& bytes)
{
    std::string s = "[";
    for (size_t i = 0; i < bytes.size(); ++i)
    {
        s += (i ? ", " : "") + std::to_string(bytes[i]);
    }
    return s + "]";
}

// ns-3's BSS as kind "wifi" builds it (wifi.cc): same standard, fixed rates, Yans channel, layout.
std::string
RunNs3(const Scenario& sc, const DcfPhy& phy, Sink& up, Sink& down)
{
    bool band24 = sc.bandGhz < 3;
    ns3::WifiStandard standard = sc.standard == "g"    ? ns3::WIFI_STANDARD_80211g
                                 : sc.standard == "a"  ? ns3::WIFI_STANDARD_80211a
                                 : sc.standard == "n"  ? ns3::WIFI_STANDARD_80211n
                                                       : ns3::WIFI_STANDARD_80211ac;
    if (!sc.explicitBar) // experiment: retransmit at once after a missed block ACK
    {
        ns3::Config::SetDefault("ns3::QosTxop::UseExplicitBarAfterMissedBlockAck", ns3::BooleanValue(false));
    }
    ns3::NodeContainer apNode(1);
    ns3::NodeContainer staNodes(sc.stations);
    ns3::YansWifiChannelHelper channelHelper = ns3::YansWifiChannelHelper::Default();
    ns3::YansWifiPhyHelper phyHelper;
    phyHelper.SetChannel(channelHelper.Create());
    phyHelper.Set("ChannelSettings",
                  ns3::StringValue("{" + std::to_string(sc.channel) + ", " + std::to_string(sc.width) + ", " +
                                   (band24 ? "BAND_2_4GHZ" : "BAND_5GHZ") + ", " + std::to_string(sc.primary20) + "}"));
    ns3::WifiHelper wifi;
    wifi.SetStandard(standard);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", ns3::StringValue(phy.dataMode),
                                 "ControlMode", ns3::StringValue(band24 ? "ErpOfdmRate24Mbps" : "OfdmRate24Mbps"));
    ns3::WifiMacHelper mac;
    ns3::Ssid ssid("calibration");
    mac.SetType("ns3::StaWifiMac", "Ssid", ns3::SsidValue(ssid));
    ns3::NetDeviceContainer staDevices = wifi.Install(phyHelper, mac, staNodes);
    mac.SetType("ns3::ApWifiMac", "Ssid", ns3::SsidValue(ssid));
    ns3::NetDeviceContainer apDevices = wifi.Install(phyHelper, mac, apNode);
    PlaceAround(apNode.Get(0), 1.5, staNodes, sc.distanceM);

    auto ap = ns3::DynamicCast<ns3::WifiNetDevice>(apDevices.Get(0));
    ap->SetPromiscReceiveCallback(ns3::MakeCallback(
        +[](Sink* sink, ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet> p, uint16_t, const ns3::Address&,
            const ns3::Address&, ns3::NetDevice::PacketType type) {
            if (type == ns3::NetDevice::PACKET_HOST)
            {
                sink->Receive(p);
            }
            return true;
        }).Bind(&up));
    auto failures = std::make_shared<uint64_t>(0);
    for (int i = 0; i < sc.stations; ++i)
    {
        auto sta = ns3::DynamicCast<ns3::WifiNetDevice>(staDevices.Get(i));
        sta->SetPromiscReceiveCallback(ns3::MakeCallback(
            +[](Sink* sink, ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet> p, uint16_t, const ns3::Address&,
                const ns3::Address&, ns3::NetDevice::PacketType type) {
                if (type == ns3::NetDevice::PACKET_HOST)
                {
                    sink->Receive(p);
                }
                return true;
            }).Bind(&down));
        for (const char* trace : {"MacTxDataFailed", "MacTxRtsFailed"})
        {
            sta->GetRemoteStationManager()->TraceConnectWithoutContext(
                trace, ns3::MakeCallback(+[](uint64_t* n, ns3::Mac48Address) { ++*n; }).Bind(failures.get()));
        }
        Generate(sc, sc.upBps, static_cast<uint16_t>(i), [sta, ap, &sc](uint16_t s) {
            sta->Send(Stamped(sc.packetBytes, s), ap->GetAddress(), 0x0800);
        });
        Generate(sc, sc.downBps, static_cast<uint16_t>(i), [sta, ap, &sc](uint16_t s) {
            ap->Send(Stamped(sc.packetBytes, s), sta->GetAddress(), 0x0800);
        });
    }
    // Data PPDUs the stations sent and the MPDUs in them (how much a PPDU aggregates).
    auto ppdus = std::make_shared<std::pair<uint64_t, uint64_t>>(0, 0);
    for (int i = 0; i < sc.stations; ++i)
    {
        ns3::DynamicCast<ns3::WifiNetDevice>(staDevices.Get(i))->GetPhy()->TraceConnectWithoutContext(
            "PhyTxPsduBegin",
            ns3::MakeCallback(+[](std::pair<uint64_t, uint64_t>* n, ns3::WifiConstPsduMap psdus, ns3::WifiTxVector, double) {
                for (const auto& [id, psdu] : psdus)
                {
                    if (psdu->GetHeader(0).IsQosData() || psdu->GetHeader(0).IsData())
                    {
                        n->first++;
                        n->second += psdu->GetNMpdus();
                    }
                }
            }).Bind(ppdus.get()));
    }
    // PPDUs whose payload failed at a receiver (it then waits EIFS instead of AIFS), at the AP
    // and at the stations, and PPDUs a receiver dropped before their payload, by reason.
    auto rxErrors = std::make_shared<std::pair<uint64_t, uint64_t>>(0, 0);
    auto rxDrops = std::make_shared<std::map<std::string, uint64_t>>();
    for (uint32_t i = 0; i <= static_cast<uint32_t>(sc.stations); ++i)
    {
        bool isAp = i == 0;
        auto device = ns3::DynamicCast<ns3::WifiNetDevice>(isAp ? apDevices.Get(0) : staDevices.Get(i - 1));
        uint64_t* errors = isAp ? &rxErrors->first : &rxErrors->second;
        device->GetPhy()->GetState()->TraceConnectWithoutContext(
            "RxError", ns3::MakeCallback(+[](uint64_t* n, ns3::Ptr<const ns3::Packet>, double) { ++*n; }).Bind(errors));
        device->GetPhy()->TraceConnectWithoutContext(
            "PhyRxDrop",
            ns3::MakeCallback(+[](std::map<std::string, uint64_t>* drops, std::string side, ns3::Ptr<const ns3::Packet>,
                                  ns3::WifiPhyRxfailureReason reason) {
                std::ostringstream name;
                name << side << reason;
                ++(*drops)[name.str()];
            }).Bind(rxDrops.get(), std::string(isAp ? "ap_" : "sta_")));
    }
    auto staDevice = ns3::DynamicCast<ns3::WifiNetDevice>(staDevices.Get(0));
    ns3::Ptr<ns3::WifiPhy> staPhy = staDevice->GetPhy();
    ns3::Ptr<ns3::Txop> txop = staDevice->GetMac()->GetQosSupported()
                                   ? ns3::Ptr<ns3::Txop>(staDevice->GetMac()->GetQosTxop(ns3::AC_BE))
                                   : staDevice->GetMac()->GetTxop();
    ns3::TypeId::AttributeInformation rtsInfo; // settable only: its default is what applies
    ns3::TypeId::LookupByName("ns3::WifiRemoteStationManager").LookupAttributeByName("RtsCtsThreshold", &rtsInfo);
    std::string rts = rtsInfo.initialValue->SerializeToString(rtsInfo.checker);
    uint32_t maxAmpdu = staDevice->GetMac()->GetQosSupported() ? staDevice->GetMac()->GetMaxAmpduSize(ns3::AC_BE) : 0;
    uint32_t retryLimit = staDevice->GetMac()->GetFrameRetryLimit();
    ns3::Simulator::Stop(ns3::Seconds(sc.startS + sc.warmupS + sc.durationS + 0.1));
    ns3::Simulator::Run();
    bool associated = true;
    for (int i = 0; i < sc.stations; ++i)
    {
        auto sta = ns3::DynamicCast<ns3::WifiNetDevice>(staDevices.Get(i));
        associated = associated && ns3::DynamicCast<ns3::StaWifiMac>(sta->GetMac())->IsAssociated();
    }
    std::string drops = "{";
    for (const auto& [reason, n] : *rxDrops)
    {
        drops += (drops.size() > 1 ? ", \"" : "\"") + reason + "\": " + std::to_string(n);
    }
    drops += "}";
    char out[800];
    std::snprintf(out, sizeof(out),
                  "\"rx_errors_ap\": %llu, \"rx_errors_sta\": %llu, "
                  "\"data_ppdus\": %llu, \"data_mpdus\": %llu, \"failures\": %llu, \"associated\": %s, \"ns3\": {\"slot_us\": %.1f, \"sifs_us\": %.1f, "
                  "\"aifsn\": %u, \"cw_min\": %u, \"cw_max\": %u, \"qos\": %s, \"rts_threshold\": %s, "
                  "\"max_ampdu_bytes\": %u, \"retry_limit\": %u}",
                  static_cast<unsigned long long>(rxErrors->first), static_cast<unsigned long long>(rxErrors->second),
                  static_cast<unsigned long long>(ppdus->first), static_cast<unsigned long long>(ppdus->second),
                  static_cast<unsigned long long>(*failures), associated ? "true" : "false",
                  staPhy->GetSlot().GetMicroSeconds() * 1.0, staPhy->GetSifs().GetMicroSeconds() * 1.0,
                  static_cast<unsigned>(txop->GetAifsn()), static_cast<unsigned>(txop->GetMinCw()),
                  static_cast<unsigned>(txop->GetMaxCw()), staDevice->GetMac()->GetQosSupported() ? "true" : "false",
                  rts.c_str(), maxAmpdu, retryLimit);
    return out + std::string(", \"rx_drops\": ") + drops;
}

std::string
RunDcf(const Scenario& sc, const DcfPhy& phy, Sink& up, Sink& down)
{
    auto random = ns3::CreateObject<ns3::UniformRandomVariable>();
    DcfMedium medium(phy, sc.stations, 500, 0.5, random, [&](int from, int, Frame&& frame) {
        (from == DcfMedium::kAp ? down : up).Receive(frame.packet);
    });
    for (int i = 0; i < sc.stations; ++i)
    {
        int node = i + 1;
        Generate(sc, sc.upBps, static_cast<uint16_t>(i), [&medium, &sc, node](uint16_t s) {
            Frame f;
            f.packet = Stamped(sc.packetBytes, s);
            medium.Enqueue(node, DcfMedium::kAp, std::move(f));
        });
        Generate(sc, sc.downBps, static_cast<uint16_t>(i), [&medium, &sc, node](uint16_t s) {
            Frame f;
            f.packet = Stamped(sc.packetBytes, s);
            medium.Enqueue(DcfMedium::kAp, node, std::move(f));
        });
    }
    ns3::Simulator::Stop(ns3::Seconds(sc.startS + sc.warmupS + sc.durationS + 0.1));
    ns3::Simulator::Run();
    // "failures" as ns-3's MacTxDataFailed counts them at the stations: MPDUs not acknowledged.
    uint64_t failures = 0, collisions = 0, retryDrops = 0, exchanges = 0, ppdus = 0, mpdus = 0;
    for (int n = 0; n <= sc.stations; ++n)
    {
        const DcfCounters& c = medium.Counters(n);
        failures += n == DcfMedium::kAp ? 0 : c.retries + c.retryDrops;
        ppdus += n == DcfMedium::kAp ? 0 : c.exchanges + c.collisions;
        mpdus += n == DcfMedium::kAp ? 0 : c.txFrames + c.retries + c.retryDrops;
        collisions += c.collisions;
        retryDrops += c.retryDrops;
        exchanges += c.exchanges;
    }
    char out[300];
    std::snprintf(out, sizeof(out),
                  "\"data_ppdus\": %llu, \"data_mpdus\": %llu, "
                  "\"failures\": %llu, \"collisions\": %llu, \"retry_drops\": %llu, \"exchanges\": %llu, "
                  "\"busy_s\": %.4f",
                  static_cast<unsigned long long>(ppdus), static_cast<unsigned long long>(mpdus),
                  static_cast<unsigned long long>(failures), static_cast<unsigned long long>(collisions),
                  static_cast<unsigned long long>(retryDrops), static_cast<unsigned long long>(exchanges),
                  medium.BusySeconds());
    return out;
}

} // namespace

int
RunCalibration(const std::string& scenarioPath)
{
    try
    {
        Json j = Json::ParseFile(scenarioPath);
        Scenario sc;
        sc.model = j.Str("model");
        sc.standard = j.Str("standard");
        sc.bandGhz = j.Num("band_ghz");
        sc.width = static_cast<int>(j.Num("width_mhz"));
        sc.channel = static_cast<int>(j.Num("channel_number"));
        sc.primary20 = static_cast<int>(j.Num("primary20", 0));
        sc.stations = static_cast<int>(j.Num("stations"));
        sc.packetBytes = static_cast<uint32_t>(j.Num("packet_bytes", 1500));
        sc.upBps = j.Num("up_bps", 0);
        sc.downBps = j.Num("down_bps", 0);
        sc.poisson = j.Has("poisson") && j.At("poisson").boolean;
        sc.explicitBar = !j.Has("explicit_bar") || j.At("explicit_bar").boolean;
        sc.warmupS = j.Num("warmup_s", 1.0);
        sc.durationS = j.Num("duration_s", 5.0);
        ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(j.Num("seed", 1)));
        DcfPhy phy = DcfPhyFor(sc.standard, sc.bandGhz, sc.width);
        Sink up, down;
        for (Sink* s : {&up, &down})
        {
            s->from = sc.startS + sc.warmupS;
            s->until = s->from + sc.durationS;
            s->bytes.assign(sc.stations, 0);
        }
        std::clock_t cpu0 = std::clock();
        std::string extra = sc.model == "ns3" ? RunNs3(sc, phy, up, down) : RunDcf(sc, phy, up, down);
        double cpuS = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
        ns3::Simulator::Destroy();
        std::printf("{\"model\": \"%s\", \"stations\": %d, \"duration_s\": %.3f, \"cpu_s\": %.3f, "
                    "\"up_bytes\": %s, \"down_bytes\": %s, \"up_delay_ms\": %s, \"down_delay_ms\": %s, %s}\n",
                    sc.model.c_str(), sc.stations, sc.durationS, cpuS, BytesList(up.bytes).c_str(),
                    BytesList(down.bytes).c_str(), Percentiles(up.delaysMs).c_str(),
                    Percentiles(down.delaysMs).c_str(), extra.c_str());
        return 0;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "radio-emulator --calibrate: %s\n", e.what());
        return 1;
    }
}

} // namespace rigemu
