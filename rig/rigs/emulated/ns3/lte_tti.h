// An LTE FDD cell as a 1 ms TTI scheduler (kind "lte_tti"): per UE an uplink and a downlink RLC
// buffer, a scheduler that shares the cell's PRBs every TTI (round robin or proportional fair),
// per-UE MCS from a configured SINR (or a SINR trace), transport block sizes from 3GPP TS
// 36.213, the uplink's scheduling request / buffer status report delay, and HARQ
// retransmissions at a target BLER with their 8 ms round trip. No PHY: a transport block
// succeeds or fails by a draw at the configured BLER. The cell has events only while a UE has
// data (an idle cell costs nothing). docs/emulator.md, kind lte_tti.
#pragma once

#include "json.h"
#include "pipe.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rigemu
{

struct LteTtiConfig
{
    int prb = 50;
    std::string dlScheduler = "pf"; // "rr" | "pf"
    std::string ulScheduler = "rr";
    double targetBler = 0.0;        // first transmissions that fail
    double retxBler = 0.0;          // retransmissions that fail (soft combining helps)
    int maxHarqTx = 4;              // transmissions of a TB before it is given up
    int harqRttTtis = 8;
    int ulGrantDelayTtis = 4;       // grant in TTI n, PUSCH in n + 4
    int dlTxDelayTtis = 3;          // scheduled in n, decoded by the UE in n + 3
    int srPeriodTtis = 1;           // scheduling request opportunities
    int srToBsrTtis = 7;            // SR sent -> the eNodeB knows the UE's buffer
    int minUlPrb = 3;               // smallest uplink grant of a shared TTI
    bool pfWholeBand = true;        // pf: the best UE of a TTI takes every free PRB (as ns-3's PF)
    uint32_t rlcBufferBytes = 256 * 1024; // per UE and direction (RLC UM transmission buffer)
    double processingDelayS = 0.0;  // decoding + core network, after the TTI that carried it

    static LteTtiConfig From(const Json& cell);
};

// One UE's radio: SINR in dB, constant or a trace of (seconds since start, dB) steps.
struct LteTtiUeRadio
{
    double ulSinrDb = 18.8;
    double dlSinrDb = 25.0;
    std::vector<std::pair<double, double>> ulTrace;
    std::vector<std::pair<double, double>> dlTrace;

    static LteTtiUeRadio From(const Json& station, const Json& cell);

    double SinrDb(bool up, double nowS) const; // the trace's step at nowS, else the constant
};

struct LteTtiCounters
{
    uint64_t grants = 0;    // TBs first transmitted
    uint64_t mcsSum = 0;
    uint64_t prbSum = 0;
    uint64_t tbBits = 0;    // first transmissions, padding included
    uint64_t harqRetx = 0;  // retransmissions
    uint64_t harqFailed = 0; // TBs given up after maxHarqTx
    uint64_t bufferDrops = 0; // SDUs refused by a full RLC buffer
    uint64_t deliveredBytes = 0;
};

// MCS (0-28) for a SINR: the spectral efficiency log2(1 + SINR / gamma), gamma for a bit error
// rate of 5e-5 (-ln(5 BER) / 1.5), rounded down to a CQI of 36.213 Table 7.2.3-1, then the
// highest MCS of no more efficiency. -1: out of range (no transmission).
int LteMcsForSinr(double sinrDb);

class LteTtiCell
{
  public:
    // `deliver(ue, up, frame, enqueued)`: an SDU left the cell (uplink: at the eNodeB, downlink:
    // at the UE) at the current simulated time.
    using Deliver = std::function<void(size_t ue, bool up, Frame frame, ns3::Time enqueued)>;

    LteTtiCell(const LteTtiConfig& config, std::vector<LteTtiUeRadio> ues, Deliver deliver);

    // An SDU (an IP packet) for the UE's uplink or downlink buffer; false: buffer full, dropped.
    bool Enqueue(size_t ue, bool up, Frame frame);

    size_t Ues() const { return m_ues.size(); }
    const LteTtiCounters& Counters(size_t ue, bool up) const { return Bearer(ue, up).counters; }
    uint64_t QueuedBytes(size_t ue, bool up) const { return Bearer(ue, up).unsentBytes; }
    void ResetCounters();
    uint64_t TtisRun() const { return m_ttisRun; }

  private:
    struct Sdu
    {
        Frame frame;
        ns3::Time enqueued;
        uint32_t unsent = 0;
        uint32_t pendingTbs = 0; // TBs carrying part of it that are not decoded yet
        bool lost = false;
    };

    struct BearerState
    {
        std::deque<Sdu> sdus;
        uint64_t firstSeq = 0;   // sequence number of sdus.front()
        uint64_t nextUnsent = 0; // first SDU with bytes not yet in a TB
        uint64_t unsentBytes = 0;
        LteTtiCounters counters;
        double avgBps = 1.0;     // proportional fair: served rate, moving average
    };

    struct Ue
    {
        LteTtiUeRadio radio;
        BearerState ul;
        BearerState dl;
        uint64_t ulKnown = 0;     // bytes the eNodeB believes the UE has (its last BSR)
        uint64_t ulGranted = 0;   // bytes granted, PUSCH not sent yet
        bool srPending = false;
    };

    struct Tb
    {
        size_t ue = 0;
        bool up = false;
        int mcs = 0;
        int prbs = 0;
        uint32_t bytes = 0;
        int tx = 0; // transmissions so far
        std::vector<uint64_t> seqs; // SDUs with bytes in it
    };

    BearerState& Bearer(size_t ue, bool up) { return up ? m_ues[ue].ul : m_ues[ue].dl; }
    const BearerState& Bearer(size_t ue, bool up) const { return up ? m_ues[ue].ul : m_ues[ue].dl; }

    int64_t NowTti() const;
    void Wake();          // makes sure the TTI loop runs
    void Tti();
    bool Busy() const;
    void OnScheduledRequest(size_t ue);

    void ScheduleUplink(int64_t tti);
    void ScheduleDownlink(int64_t tti);
    // PRBs per candidate (need in bytes) by the scheduler `kind`, in steps of `step` PRBs.
    std::vector<int> Allocate(const std::string& kind,
                              const std::vector<size_t>& ues,
                              const std::vector<uint64_t>& need,
                              const std::vector<int>& mcs,
                              bool up,
                              int available,
                              int step,
                              int minPrb);
    int McsOf(size_t ue, bool up) const;
    uint32_t TbBytes(int mcs, int prbs, bool up) const;
    Tb Fill(size_t ue, bool up, int mcs, int prbs); // takes bytes from the buffer
    void Transmit(Tb tb, int64_t tti);              // on air in `tti`: success or HARQ
    void Decoded(const Tb& tb, bool ok);
    void DeliverInOrder(size_t ue, bool up);

    LteTtiConfig m_config;
    std::vector<Ue> m_ues;
    Deliver m_deliver;
    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    ns3::EventId m_tti;
    std::map<int64_t, std::vector<Tb>> m_ulAir;     // PUSCH per TTI (grants; retransmissions)
    std::map<int64_t, std::vector<Tb>> m_dlRetx;    // PDSCH retransmissions per TTI
    std::map<int64_t, int> m_ulReserved;            // PRBs taken by retransmissions per TTI
    std::map<int64_t, int> m_dlReserved;
    size_t m_rrNext = 0;
    uint64_t m_ttisRun = 0;
    int m_pendingSr = 0;
};

} // namespace rigemu
