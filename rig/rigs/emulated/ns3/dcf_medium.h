// One 802.11 BSS as a per-frame DCF/EDCA medium: the AP and N stations contend for one channel.
// Event-driven (no per-slot ticking): while the medium is idle the next event is the earliest
// end of a contender's backoff; the contenders that reach zero in the same slot collide. A frame
// exchange costs its real air time: AIFS, backoff, [RTS/CTS], preamble + data at the PHY rate
// (an A-MPDU for n/ac), SIFS, ACK or block ACK. A collision doubles the colliders' window.
#pragma once

#include "dcf_phy.h"
#include "pipe.h"

#include "ns3/event-id.h"
#include "ns3/random-variable-stream.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace rigemu
{

struct DcfCounters
{
    uint64_t txFrames = 0;     // frames delivered over the air
    uint64_t txBytes = 0;      // their payload bytes
    uint64_t exchanges = 0;    // PPDUs that got through (an A-MPDU counts once)
    uint64_t collisions = 0;   // transmissions of this node that collided
    uint64_t retries = 0;      // frames sent again after a collision
    uint64_t retryDrops = 0;   // frames dropped at the retry limit
    uint64_t queueDrops = 0;   // dropped at a full queue
    uint64_t expired = 0;      // dropped after waiting longer than the queue's max delay
};

class DcfMedium
{
  public:
    static constexpr int kAp = 0; // node 0 is the AP, nodes 1..N the stations

    // `deliver(from, to, frame)`: a frame got through; `to` is a node, or -1 for a frame the AP
    // sent group-addressed (to every station).
    using DeliverFn = std::function<void(int from, int to, Frame&& frame)>;

    DcfMedium(const DcfPhy& phy,
              int stations,
              uint32_t queuePackets,
              double maxDelayS,
              ns3::Ptr<ns3::UniformRandomVariable> random,
              DeliverFn deliver);

    // Queues a frame at node `from` for node `to` (stations send only to the AP; the AP sends to
    // a station, or to -1: every station). False: dropped at the full queue.
    bool Enqueue(int from, int to, Frame frame);

    const DcfPhy& Phy() const { return m_phy; }
    const DcfCounters& Counters(int node) const { return m_nodes[node].counters; }
    size_t QueueLength(int node) const { return m_nodes[node].queued; }
    // Seconds of air time used so far (exchanges and collisions).
    double BusySeconds() const { return m_busyNs * 1e-9; }

  private:
    struct Item
    {
        Frame frame;
        int64_t enqueuedNs = 0;
    };

    struct Node
    {
        // The AP keeps one queue per destination (index: station node, 0: group-addressed) and
        // sends the oldest head first; a station has one queue (index 0, to the AP).
        std::vector<std::deque<Item>> queues;
        size_t queued = 0;
        int cw = 0;
        int backoff = 0;         // slots still to count down (0: may send once idle for AIFS)
        int64_t countFromNs = 0; // when the countdown (re)starts: end of the last busy period + AIFS
        int retries = 0;         // of the frame(s) at the head
        int sending = -1;        // queue being sent in the current exchange (-1: none)
        int barQueue = -1;       // queue whose A-MPDU missed its block ACK: a BlockAckReq goes next
        size_t sendingCount = 0; // frames of that queue in the PPDU (0: a BlockAckReq)
        DcfCounters counters;
    };

    int64_t NowNs() const;
    int64_t SlotNs() const { return static_cast<int64_t>(m_phy.slotUs * 1000); }
    int64_t TxTimeNs(const Node& node) const { return node.countFromNs + node.backoff * SlotNs(); }
    void DrawBackoff(Node& node);
    void ScheduleAccess();
    void Access();
    void Deliver(int sender); // a lone sender's frames reached their receiver
    void EndExchange(std::vector<int> senders, bool collided);
    // Picks the queue and the frames of the node's next PPDU; returns its air time (us) or 0
    // when nothing is left to send (expired frames are dropped here).
    double PreparePpdu(Node& node, bool& needsAck, bool& rts);
    void DropHead(Node& node);
    void DropExpired(Node& node); // every frame older than the max delay that is not on the air

    DcfPhy m_phy;
    uint32_t m_queuePackets;
    int64_t m_maxDelayNs;
    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    DeliverFn m_deliver;
    std::vector<Node> m_nodes;
    bool m_busy = false;
    ns3::EventId m_access;
    int64_t m_busyNs = 0;
};

} // namespace rigemu
