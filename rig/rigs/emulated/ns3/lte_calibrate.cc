#include "lte_calibrate.h"

#include "json.h"
#include "lte.h"
#include "lte_tti.h"

#include "ns3/data-rate.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/lte-enb-mac.h"
#include "ns3/lte-enb-net-device.h"
#include "ns3/node-container.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/random-variable-stream.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "ns3/udp-socket-factory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace rigemu
{

namespace
{

struct Scenario
{
    std::string model;
    int ues = 1;
    bool up = true;
    double offeredBps = 0;   // per UE
    uint32_t packetBytes = 1500; // IP packet
    double startS = 0.5;
    double warmupS = 2;      // after start: not measured
    double measureS = 5;
    bool poisson = false; // exponential gaps between packets (else constant)
};

// What one UE's flow delivered in the measured window.
struct FlowStats
{
    uint64_t bytes = 0;
    std::vector<double> delayMs;
};

struct Run
{
    Scenario s;
    std::vector<FlowStats> flows;
    double mcsSum = 0;
    uint64_t grants = 0;

    void Received(size_t ue, uint32_t bytes, ns3::Time sent)
    {
        double from = s.startS + s.warmupS;
        double now = ns3::Simulator::Now().GetSeconds();
        if (sent.GetSeconds() >= from && now <= from + s.measureS)
        {
            flows[ue].bytes += bytes;
            flows[ue].delayMs.push_back((ns3::Simulator::Now() - sent).GetSeconds() * 1000);
        }
    }
};

double
Percentile(std::vector<double> v, double q)
{
    if (v.empty())
    {
        return NAN;
    }
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(std::min<double>(v.size() - 1, std::floor(q * v.size())))];
}

ns3::Ptr<ns3::ExponentialRandomVariable> g_gaps;

ns3::Time
Interval(const Scenario& s)
{
    double mean = s.packetBytes * 8.0 / s.offeredBps;
    if (!s.poisson)
    {
        return ns3::Seconds(mean);
    }
    if (!g_gaps)
    {
        g_gaps = ns3::CreateObject<ns3::ExponentialRandomVariable>();
    }
    return ns3::Seconds(g_gaps->GetValue(mean, 0));
}

// ---- ns-3's LENA cell, set up as kind lte sets it up (LenaCell, lte.cc) ----

struct UdpFlow
{
    Run* run;
    size_t ue;
    ns3::Ptr<ns3::Socket> tx;
    ns3::Address to;
    uint32_t payload;
};

void
SendUdp(UdpFlow* f)
{
    std::vector<uint8_t> buf(f->payload, 0);
    int64_t ns = ns3::Simulator::Now().GetNanoSeconds();
    std::memcpy(buf.data(), &ns, sizeof(ns));
    f->tx->SendTo(ns3::Create<ns3::Packet>(buf.data(), f->payload), 0, f->to);
    ns3::Simulator::Schedule(Interval(f->run->s), &SendUdp, f);
}

void
ReceiveUdp(Run* run, size_t ue, ns3::Ptr<ns3::Socket> socket)
{
    while (ns3::Ptr<ns3::Packet> p = socket->Recv())
    {
        int64_t ns = 0;
        p->CopyData(reinterpret_cast<uint8_t*>(&ns), sizeof(ns));
        run->Received(ue, p->GetSize() + 28, ns3::NanoSeconds(ns));
    }
}

void
OnUlScheduling(Run* run, uint32_t, uint32_t, uint16_t, uint8_t mcs, uint16_t, uint8_t)
{
    run->mcsSum += mcs;
    run->grants++;
}

void
OnDlScheduling(Run* run, ns3::DlSchedulingCallbackInfo info)
{
    run->mcsSum += info.mcsTb1;
    run->grants++;
}

ns3::Ptr<ns3::LteHelper>
RunLena(Run& run, const Json& cell, std::vector<std::unique_ptr<UdpFlow>>& flows)
{
    const Scenario& s = run.s;
    LenaCell lena(cell, s.ues);

    ns3::Ptr<ns3::Node> pgw = lena.epc->GetPgwNode();
    ns3::NodeContainer remote(1);
    ns3::InternetStackHelper internet;
    internet.Install(remote);
    ns3::PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", ns3::DataRateValue(ns3::DataRate("100Gb/s")));
    p2p.SetDeviceAttribute("Mtu", ns3::UintegerValue(1500));
    p2p.SetChannelAttribute("Delay", ns3::TimeValue(ns3::Seconds(0)));
    ns3::NetDeviceContainer sgi = p2p.Install(pgw, remote.Get(0));
    ns3::Ipv4AddressHelper addresses("1.0.0.0", "255.0.0.0");
    ns3::Ipv4Address remoteAddress = addresses.Assign(sgi).GetAddress(1);
    ns3::Ipv4StaticRoutingHelper routing;
    routing.GetStaticRouting(remote.Get(0)->GetObject<ns3::Ipv4>())
        ->AddNetworkRouteTo("7.0.0.0", "255.0.0.0", 1);

    lena.Install(cell);
    ns3::Ipv4InterfaceContainer ueAddresses = lena.epc->AssignUeIpv4Address(lena.ueDevices);
    for (int i = 0; i < s.ues; ++i)
    {
        routing.GetStaticRouting(lena.ueNodes.Get(i)->GetObject<ns3::Ipv4>())
            ->SetDefaultRoute(lena.epc->GetUeDefaultGatewayAddress(), 1);
    }
    lena.lte->Attach(lena.ueDevices, lena.enbDevices.Get(0));
    auto enb = ns3::DynamicCast<ns3::LteEnbNetDevice>(lena.enbDevices.Get(0));
    if (s.up)
    {
        enb->GetMac()->TraceConnectWithoutContext("UlScheduling", ns3::MakeBoundCallback(&OnUlScheduling, &run));
    }
    else
    {
        enb->GetMac()->TraceConnectWithoutContext("DlScheduling", ns3::MakeBoundCallback(&OnDlScheduling, &run));
    }

    auto udp = ns3::UdpSocketFactory::GetTypeId();
    for (int i = 0; i < s.ues; ++i)
    {
        ns3::Ptr<ns3::Node> sender = s.up ? lena.ueNodes.Get(i) : remote.Get(0);
        ns3::Ptr<ns3::Node> receiver = s.up ? remote.Get(0) : lena.ueNodes.Get(i);
        ns3::Ipv4Address to = s.up ? remoteAddress : ueAddresses.GetAddress(i);
        uint16_t port = 10000 + i;
        auto rx = ns3::Socket::CreateSocket(receiver, udp);
        rx->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
        rx->SetRecvCallback(ns3::MakeBoundCallback(&ReceiveUdp, &run, static_cast<size_t>(i)));
        auto flow = std::make_unique<UdpFlow>();
        flow->run = &run;
        flow->ue = i;
        flow->tx = ns3::Socket::CreateSocket(sender, udp);
        flow->tx->Bind();
        flow->to = ns3::InetSocketAddress(to, port);
        flow->payload = s.packetBytes - 28;
        ns3::Simulator::Schedule(ns3::Seconds(s.startS) + ns3::MicroSeconds(37 * i), &SendUdp, flow.get());
        flows.push_back(std::move(flow));
    }
    return lena.lte; // the helpers own the EPC's nodes: they must outlive the run
}

// ---- the TTI model ----

void
GenerateSdu(LteTtiCell* cell, const Scenario* s, size_t ue)
{
    Frame frame;
    frame.packet = ns3::Create<ns3::Packet>(s->packetBytes);
    cell->Enqueue(ue, s->up, std::move(frame));
    ns3::Simulator::Schedule(Interval(*s), &GenerateSdu, cell, s, ue);
}

std::unique_ptr<LteTtiCell>
MakeTtiCell(Run& run, const Json& cell)
{
    std::vector<LteTtiUeRadio> radios;
    Json none;
    none.type = Json::Type::Object;
    for (int i = 0; i < run.s.ues; ++i)
    {
        radios.push_back(LteTtiUeRadio::From(none, cell));
    }
    auto model = std::make_unique<LteTtiCell>(LteTtiConfig::From(cell),
                                              std::move(radios),
                                              [&run](size_t ue, bool, Frame frame, ns3::Time enqueued) {
                                                  run.Received(ue, frame.packet->GetSize(), enqueued);
                                              });
    for (int i = 0; i < run.s.ues; ++i)
    {
        ns3::Simulator::Schedule(ns3::Seconds(run.s.startS) + ns3::MicroSeconds(37 * i),
                                 &GenerateSdu, model.get(), &run.s, static_cast<size_t>(i));
    }
    return model;
}

} // namespace

int
RunLteCalibration(const std::string& configPath)
{
    Json config = Json::ParseFile(configPath);
    Run run;
    run.s.model = config.Str("model");
    run.s.ues = static_cast<int>(config.Num("ues"));
    run.s.up = config.Str("direction", "ul") == "ul";
    run.s.offeredBps = config.Num("offered_bps");
    run.s.packetBytes = static_cast<uint32_t>(config.Num("packet_bytes", 1500));
    run.s.warmupS = config.Num("warmup_s", run.s.warmupS);
    run.s.poisson = config.Str("arrivals", "constant") == "poisson";
    run.s.measureS = config.Num("measure_s", run.s.measureS);
    run.flows.resize(run.s.ues);
    ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(config.Num("seed", 1)));
    const Json& cell = config.At("cell");
    auto wallStart = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<UdpFlow>> flows;
    std::unique_ptr<LteTtiCell> tti;
    ns3::Ptr<ns3::LteHelper> lena;
    if (run.s.model == "lte")
    {
        lena = RunLena(run, cell, flows);
    }
    else if (run.s.model == "lte_tti")
    {
        tti = MakeTtiCell(run, cell);
    }
    else
    {
        std::fprintf(stderr, "radio-emulator: calibration model '%s' is not lte or lte_tti\n", run.s.model.c_str());
        return 2;
    }
    ns3::Simulator::Stop(ns3::Seconds(run.s.startS + run.s.warmupS + run.s.measureS + 0.001));
    ns3::Simulator::Run();
    double wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    std::vector<double> all;
    std::string ues;
    uint64_t total = 0;
    for (const FlowStats& f : run.flows)
    {
        all.insert(all.end(), f.delayMs.begin(), f.delayMs.end());
        total += f.bytes;
        char text[256];
        std::snprintf(text, sizeof(text), "%s{\"bps\": %.0f, \"p50_ms\": %.2f, \"p90_ms\": %.2f}",
                      ues.empty() ? "" : ", ", f.bytes * 8 / run.s.measureS,
                      Percentile(f.delayMs, 0.5), Percentile(f.delayMs, 0.9));
        ues += text;
    }
    uint64_t retx = 0;
    if (tti)
    {
        for (int i = 0; i < run.s.ues; ++i)
        {
            const LteTtiCounters& c = tti->Counters(i, run.s.up);
            retx += c.harqRetx;
            run.mcsSum += c.mcsSum;
            run.grants += c.grants;
        }
    }
    std::printf("{\"model\": \"%s\", \"aggregate_bps\": %.0f, \"delay_ms\": {\"p10\": %.2f, \"p50\": %.2f, "
                "\"p90\": %.2f, \"p99\": %.2f}, \"packets\": %zu, \"mcs\": %.2f, \"grants\": %llu, "
                "\"harq_retx\": %llu, \"wall_s\": %.2f, \"ues\": [%s]}\n",
                run.s.model.c_str(), total * 8 / run.s.measureS,
                Percentile(all, 0.1), Percentile(all, 0.5), Percentile(all, 0.9), Percentile(all, 0.99),
                all.size(), run.grants ? run.mcsSum / run.grants : NAN,
                static_cast<unsigned long long>(run.grants), static_cast<unsigned long long>(retx),
                wallS, ues.c_str());
    g_gaps = nullptr;
    ns3::Simulator::Destroy();
    return 0;
}

} // namespace rigemu
