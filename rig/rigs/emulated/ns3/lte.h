// kind "lte": one LENA cell with its EPC. Every station TAP is a UE (its node's LTE
// interface); the gateway TAP is the PGW's SGi side. Like a USB LTE modem, the emulator answers
// the node's ARP requests itself and carries only IPv4: the UE's IP address is the node's
// address on that interface, and the PGW is an IP hop between the cell and the EPC namespace.
#pragma once

#include "edge.h"
#include "json.h"
#include "network.h"

#include "tap.h"
#include "ns3/lte-common.h"
#include "ns3/lte-helper.h"
#include "ns3/lte-ue-net-device.h"
#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/point-to-point-epc-helper.h"

#include <map>
#include <memory>
#include <vector>

namespace rigemu
{

// ns-3's LENA cell with its EPC as kind lte sets it up; the LTE calibration (lte_calibrate.cc)
// builds the same cell. In two steps, so a caller can make nodes of its own in between: the
// order in which objects are made fixes their random streams, and so the results.
struct LenaCell
{
    // The helpers, from the cell's fields (prb, dl_earfcn, ul_earfcn, scheduler,
    // rlc_buffer_bytes, ue_tx_power_dbm), for `ues` UEs.
    LenaCell(const Json& cell, size_t ues);

    // The eNodeB and the UEs on a circle around it (distance_m), their devices, an IP stack on
    // each UE and its downlink CQI period (cqi_period_ms).
    void Install(const Json& cell);

    size_t nUes;
    ns3::Ptr<ns3::LteHelper> lte;
    ns3::Ptr<ns3::PointToPointEpcHelper> epc;
    ns3::NodeContainer enbNode;
    ns3::NodeContainer ueNodes;
    ns3::NetDeviceContainer enbDevices;
    ns3::NetDeviceContainer ueDevices;
};

class LteNetwork : public RadioNetwork
{
  public:
    explicit LteNetwork(const Json& config);

    bool Ready() const override;
    void WriteStats(std::FILE* out, double unixTime) override;
    bool HasStation(const std::string& tap) const override { return FindEdge(m_edges, tap) != nullptr; }
    Pipe* StationPipe(const std::string& tap, bool up) override
    {
        StationEdge* edge = FindEdge(m_edges, tap);
        return edge ? edge->ControlPipe(up) : nullptr;
    }

  private:
    // Per UE and second: what the eNodeB's uplink scheduler and SRS measurements saw.
    struct RadioCounters
    {
        double sinrSum = 0; // linear
        uint32_t sinrReports = 0;
        uint64_t ulMcsSum = 0;
        uint64_t ulGrants = 0;
        uint64_t ulTbBits = 0;
        uint64_t ulPrbSubframes = 0; // PRBs the UE sent on, summed over its subframes
        uint64_t dlMcsSum = 0;
        uint64_t dlGrants = 0;
        uint64_t dlTbBits = 0;
    };

    void ConnectSgi(ns3::Ptr<ns3::Node> pgw, const Json& cell);
    void FromNode(size_t station, Frame frame);
    bool FromAirAtUe(size_t station,
                     ns3::Ptr<ns3::NetDevice>,
                     ns3::Ptr<const ns3::Packet> packet,
                     uint16_t protocol,
                     const ns3::Address&);
    void AnswerArp(size_t station, ns3::Ptr<const ns3::Packet> packet);
    void OnUlScheduling(uint32_t frame, uint32_t subframe, uint16_t rnti, uint8_t mcs, uint16_t tbsBytes, uint8_t cc);
    void OnUeSinr(uint16_t cellId, uint16_t rnti, double sinr, uint8_t cc);
    void OnDlScheduling(ns3::DlSchedulingCallbackInfo info);
    void OnUlResourceBlocks(size_t station, uint16_t rnti, const std::vector<int>& rbs);
    RadioCounters* CountersOf(uint16_t rnti);

    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    LenaCell m_lena;
    ns3::Ptr<TapNetDevice> m_gateway;
    std::vector<std::unique_ptr<StationEdge>> m_edges;
    std::vector<ns3::Ptr<ns3::LteUeNetDevice>> m_ues;
    std::vector<ns3::Mac48Address> m_nodeMac; // learned from the node's frames
    std::vector<RadioCounters> m_radio;
    ns3::Mac48Address m_modemMac; // what the node's ARP requests are answered with
};

} // namespace rigemu
