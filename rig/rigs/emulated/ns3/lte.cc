#include "lte.h"

#include "layout.h"
#include "tap.h"

#include "ns3/arp-header.h"
#include "ns3/arp-l3-protocol.h"
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/epc-ue-nas.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/ipv4-static-routing.h"
#include "ns3/lte-enb-mac.h"
#include "ns3/lte-enb-net-device.h"
#include "ns3/lte-enb-phy.h"
#include "ns3/lte-ue-phy.h"
#include "ns3/lte-ue-rrc.h"
#include "ns3/node-container.h"
#include "ns3/point-to-point-epc-helper.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "ns3/virtual-net-device.h"

#include <cmath>
#include <stdexcept>

namespace rigemu
{

namespace
{

// "10.20.0.11/24" -> address and mask
ns3::Ipv4InterfaceAddress
ParseCidr(const std::string& cidr)
{
    auto slash = cidr.find('/');
    if (slash == std::string::npos)
    {
        throw std::runtime_error("lte: address '" + cidr + "' needs a prefix length (a.b.c.d/n)");
    }
    int prefix = std::stoi(cidr.substr(slash + 1));
    uint32_t mask = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
    return ns3::Ipv4InterfaceAddress(ns3::Ipv4Address(cidr.substr(0, slash).c_str()), ns3::Ipv4Mask(mask));
}

// ns-3 keeps the UE's CQI reporting period (1 ms: "ideal") behind a private setter with no
// attribute. An explicit template instantiation may name a private member ([temp.spec]), so this
// is the standard-conforming way to reach it without patching ns-3.
void SetDownlinkCqiPeriod(ns3::LteUePhy& phy, ns3::Time period);

template <void (ns3::LteUePhy::*Setter)(ns3::Time)>
struct CqiPeriodSetter
{
    friend void SetDownlinkCqiPeriod(ns3::LteUePhy& phy, ns3::Time period)
    {
        (phy.*Setter)(period);
    }
};

template struct CqiPeriodSetter<&ns3::LteUePhy::SetDownlinkCqiPeriodicity>;

} // namespace

LenaCell::LenaCell(const Json& cell, size_t ues)
    : nUes(ues)
{
    auto prb = static_cast<uint32_t>(cell.Num("prb"));
    // Cheaper models where they do not change what a UE gets from the cell, so the cell keeps
    // up with the wall clock: ideal RRC signalling, control channels without errors.
    ns3::Config::SetDefault("ns3::LteSpectrumPhy::CtrlErrorModelEnabled", ns3::BooleanValue(false));
    ns3::Config::SetDefault("ns3::LteRlcUm::MaxTxBufferSize",
                            ns3::UintegerValue(static_cast<uint32_t>(cell.Num("rlc_buffer_bytes", 256 * 1024))));
    // Fixed UE power (no closed-loop power control), so the profile's power per PRB holds.
    ns3::Config::SetDefault("ns3::LteUePhy::EnableUplinkPowerControl", ns3::BooleanValue(false));
    ns3::Config::SetDefault("ns3::LteUePhy::TxPower", ns3::DoubleValue(cell.Num("ue_tx_power_dbm", 23)));
    ns3::Config::SetDefault("ns3::LteEnbRrc::SrsPeriodicity", ns3::UintegerValue(ues > 18 ? 80 : 20));

    lte = ns3::CreateObject<ns3::LteHelper>();
    lte->SetAttribute("UseIdealRrc", ns3::BooleanValue(true));
    epc = ns3::CreateObject<ns3::PointToPointEpcHelper>();
    lte->SetEpcHelper(epc);
    lte->SetSchedulerType(cell.Str("scheduler", "ns3::PfFfMacScheduler"));
    lte->SetEnbDeviceAttribute("DlBandwidth", ns3::UintegerValue(prb));
    lte->SetEnbDeviceAttribute("UlBandwidth", ns3::UintegerValue(prb));
    lte->SetEnbDeviceAttribute("DlEarfcn", ns3::UintegerValue(static_cast<uint32_t>(cell.Num("dl_earfcn"))));
    lte->SetEnbDeviceAttribute("UlEarfcn", ns3::UintegerValue(static_cast<uint32_t>(cell.Num("ul_earfcn"))));
}

void
LenaCell::Install(const Json& cell)
{
    enbNode.Create(1);
    ueNodes.Create(nUes);
    PlaceAround(enbNode.Get(0), 30, ueNodes, cell.Num("distance_m"));
    enbDevices = lte->InstallEnbDevice(enbNode);
    ueDevices = lte->InstallUeDevice(ueNodes);
    ns3::InternetStackHelper internet;
    internet.Install(ueNodes);
    for (size_t i = 0; i < nUes; ++i)
    {
        // Downlink CQI as often as the real eNodeB asks for it (rr.conf cqi_report_cnfg period),
        // not ns-3's ideal every subframe: each report costs a transport-block error estimate
        // per MCS, most of an idle cell's CPU.
        auto ue = ns3::DynamicCast<ns3::LteUeNetDevice>(ueDevices.Get(i));
        SetDownlinkCqiPeriod(*ue->GetPhy(), ns3::MilliSeconds(static_cast<int64_t>(cell.Num("cqi_period_ms", 40))));
    }
}

LteNetwork::LteNetwork(const Json& config)
    : m_random(ns3::CreateObject<ns3::UniformRandomVariable>()),
      m_lena(config.At("lte"), config.At("stations").array.size()),
      m_modemMac("02:00:00:00:00:01")
{
    const Json& cell = config.At("lte");
    m_gateway = OpenGatewayTap(config);
    m_edges = OpenStationEdges(config, m_random);
    m_lena.Install(cell);
    const ns3::NodeContainer& ueNodes = m_lena.ueNodes;

    // Each UE carries its node's address, so the PGW routes the node's traffic to it.
    ns3::Ptr<ns3::Node> pgw = m_lena.epc->GetPgwNode();
    auto pgwIpv4 = pgw->GetObject<ns3::Ipv4>();
    ns3::Ipv4StaticRoutingHelper routing;
    auto pgwRouting = routing.GetStaticRouting(pgwIpv4);
    int32_t tunnel = -1;
    for (uint32_t i = 0; i < pgw->GetNDevices(); ++i)
    {
        if (ns3::DynamicCast<ns3::VirtualNetDevice>(pgw->GetDevice(i)))
        {
            tunnel = pgwIpv4->GetInterfaceForDevice(pgw->GetDevice(i));
        }
    }
    if (tunnel < 0)
    {
        throw std::runtime_error("lte: PGW has no tunnel device");
    }
    const auto& stations = config.At("stations").array;
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        auto ue = ns3::DynamicCast<ns3::LteUeNetDevice>(m_lena.ueDevices.Get(i));
        auto ipv4 = ueNodes.Get(i)->GetObject<ns3::Ipv4>();
        int32_t ifIndex = ipv4->AddInterface(ue);
        ns3::Ipv4InterfaceAddress address = ParseCidr(stations[i].Str("address"));
        ipv4->AddAddress(ifIndex, address);
        ipv4->SetUp(ifIndex);
        pgwRouting->AddHostRouteTo(address.GetLocal(), tunnel);
        m_ues.push_back(ue);
    }
    m_lena.lte->Attach(m_lena.ueDevices, m_lena.enbDevices.Get(0));
    ConnectSgi(pgw, cell);

    m_nodeMac.assign(m_edges.size(), ns3::Mac48Address::GetBroadcast());
    m_radio.assign(m_edges.size(), RadioCounters());
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        m_edges[i]->OnFrameFromNode([this, i](Frame frame) { FromNode(i, std::move(frame)); });
        // Replaces the UE node's IP stack as the receiver: downlink packets go to the TAP.
        m_ues[i]->SetReceiveCallback(ns3::MakeCallback(&LteNetwork::FromAirAtUe, this).Bind(i));
    }
    auto enb = ns3::DynamicCast<ns3::LteEnbNetDevice>(m_lena.enbDevices.Get(0));
    enb->GetMac()->TraceConnectWithoutContext("UlScheduling", ns3::MakeCallback(&LteNetwork::OnUlScheduling, this));
    enb->GetPhy()->TraceConnectWithoutContext("ReportUeSinr", ns3::MakeCallback(&LteNetwork::OnUeSinr, this));
    enb->GetMac()->TraceConnectWithoutContext("DlScheduling", ns3::MakeCallback(&LteNetwork::OnDlScheduling, this));
    for (size_t i = 0; i < m_ues.size(); ++i)
    {
        m_ues[i]->GetPhy()->TraceConnectWithoutContext("ReportUlPhyResourceBlocks",
                                                       ns3::MakeCallback(&LteNetwork::OnUlResourceBlocks, this).Bind(i));
    }
}

void
LteNetwork::ConnectSgi(ns3::Ptr<ns3::Node> pgw, const Json& cell)
{
    // The PGW's SGi interface is the gateway TAP; ns-3's ARP and IP forwarding serve it.
    pgw->AddDevice(m_gateway);
    auto ipv4 = pgw->GetObject<ns3::Ipv4>();
    int32_t ifIndex = ipv4->AddInterface(m_gateway);
    ipv4->AddAddress(ifIndex, ParseCidr(cell.Str("sgi_address")));
    ipv4->SetUp(ifIndex);
    ns3::Ipv4StaticRoutingHelper routing;
    routing.GetStaticRouting(ipv4)->SetDefaultRoute(ns3::Ipv4Address(cell.Str("sgi_gateway").c_str()), ifIndex);
}

bool
LteNetwork::Ready() const
{
    for (const auto& ue : m_ues)
    {
        if (ue->GetNas()->GetState() != ns3::EpcUeNas::ACTIVE)
        {
            return false;
        }
    }
    return true;
}

void
LteNetwork::FromNode(size_t station, Frame frame)
{
    m_nodeMac[station] = frame.src;
    if (frame.protocol == ns3::ArpL3Protocol::PROT_NUMBER)
    {
        AnswerArp(station, frame.packet);
    }
    else if (frame.protocol == ns3::Ipv4L3Protocol::PROT_NUMBER) // IPv6 etc. do not cross this cell
    {
        m_edges[station]->CountUp(frame.WireBytes());
        m_edges[station]->Uplink(frame, m_ues[station]);
    }
}

void
LteNetwork::AnswerArp(size_t station, ns3::Ptr<const ns3::Packet> packet)
{
    ns3::ArpHeader request;
    ns3::Ptr<ns3::Packet> copy = packet->Copy();
    copy->RemoveHeader(request);
    if (!request.IsRequest() || request.GetDestinationIpv4Address() == request.GetSourceIpv4Address())
    {
        return; // replies and gratuitous announcements need no answer
    }
    ns3::ArpHeader reply;
    reply.SetReply(m_modemMac,
                   request.GetDestinationIpv4Address(),
                   request.GetSourceHardwareAddress(),
                   request.GetSourceIpv4Address());
    auto answer = ns3::Create<ns3::Packet>();
    answer->AddHeader(reply);
    m_edges[station]->Device()->SendFrom(answer, m_modemMac, m_nodeMac[station], ns3::ArpL3Protocol::PROT_NUMBER);
}

bool
LteNetwork::FromAirAtUe(size_t station,
                        ns3::Ptr<ns3::NetDevice>,
                        ns3::Ptr<const ns3::Packet> packet,
                        uint16_t protocol,
                        const ns3::Address&)
{
    Frame frame;
    frame.packet = packet->Copy();
    frame.src = m_modemMac;
    frame.dst = m_nodeMac[station];
    frame.protocol = protocol;
    m_edges[station]->Downlink(frame);
    return true;
}

LteNetwork::RadioCounters*
LteNetwork::CountersOf(uint16_t rnti)
{
    for (size_t i = 0; i < m_ues.size(); ++i)
    {
        if (m_ues[i]->GetRrc()->GetRnti() == rnti)
        {
            return &m_radio[i];
        }
    }
    return nullptr;
}

void
LteNetwork::OnUlScheduling(uint32_t, uint32_t, uint16_t rnti, uint8_t mcs, uint16_t tbsBytes, uint8_t)
{
    if (RadioCounters* c = CountersOf(rnti))
    {
        c->ulMcsSum += mcs;
        c->ulGrants++;
        c->ulTbBits += tbsBytes * 8ull;
    }
}

void
LteNetwork::OnUeSinr(uint16_t, uint16_t rnti, double sinr, uint8_t)
{
    if (RadioCounters* c = CountersOf(rnti))
    {
        c->sinrSum += sinr;
        c->sinrReports++;
    }
}

void
LteNetwork::OnDlScheduling(ns3::DlSchedulingCallbackInfo info)
{
    if (RadioCounters* c = CountersOf(info.rnti))
    {
        c->dlMcsSum += info.mcsTb1;
        c->dlGrants++;
        c->dlTbBits += (info.sizeTb1 + info.sizeTb2) * 8ull;
    }
}

void
LteNetwork::OnUlResourceBlocks(size_t station, uint16_t, const std::vector<int>& rbs)
{
    m_radio[station].ulPrbSubframes += rbs.size();
}

void
LteNetwork::WriteStats(std::FILE* out, double unixTime)
{
    for (size_t i = 0; i < m_edges.size(); ++i)
    {
        const RadioCounters& c = m_radio[i];
        auto mean = [](double sum, uint64_t n) { return n ? std::to_string(sum / n) : std::string("null"); };
        std::string sinr = c.sinrReports ? std::to_string(10 * std::log10(c.sinrSum / c.sinrReports)) : "null";
        char extra[512];
        std::snprintf(extra,
                      sizeof(extra),
                      ", \"ul_sinr_db\": %s, \"ul_mcs\": %s, \"ul_grants\": %llu, \"ul_tb_bits\": %llu, "
                      "\"ul_prbs\": %s, \"dl_mcs\": %s, \"dl_grants\": %llu, \"dl_tb_bits\": %llu, \"attached\": %s",
                      sinr.c_str(),
                      mean(c.ulMcsSum, c.ulGrants).c_str(),
                      static_cast<unsigned long long>(c.ulGrants),
                      static_cast<unsigned long long>(c.ulTbBits),
                      mean(c.ulPrbSubframes, c.ulGrants).c_str(),
                      mean(c.dlMcsSum, c.dlGrants).c_str(),
                      static_cast<unsigned long long>(c.dlGrants),
                      static_cast<unsigned long long>(c.dlTbBits),
                      m_ues[i]->GetNas()->GetState() == ns3::EpcUeNas::ACTIVE ? "true" : "false");
        m_edges[i]->WriteStats(out, unixTime, extra);
        m_radio[i] = RadioCounters();
    }
}

} // namespace rigemu
