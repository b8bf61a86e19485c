#include "dcf_medium.h"

#include "ns3/simulator.h"

#include <algorithm>

namespace rigemu
{

namespace
{

int64_t
Ns(double us)
{
    return static_cast<int64_t>(us * 1000.0 + 0.5);
}

} // namespace

DcfMedium::DcfMedium(const DcfPhy& phy,
                     int stations,
                     uint32_t queuePackets,
                     double maxDelayS,
                     ns3::Ptr<ns3::UniformRandomVariable> random,
                     DeliverFn deliver)
    : m_phy(phy),
      m_queuePackets(queuePackets),
      m_maxDelayNs(static_cast<int64_t>(maxDelayS * 1e9)),
      m_random(random),
      m_deliver(std::move(deliver)),
      m_nodes(stations + 1)
{
    for (size_t i = 0; i < m_nodes.size(); ++i)
    {
        m_nodes[i].queues.resize(i == kAp ? stations + 1 : 1);
        m_nodes[i].cw = phy.cwMin;
    }
}

int64_t
DcfMedium::NowNs() const
{
    return ns3::Simulator::Now().GetNanoSeconds();
}

void
DcfMedium::DrawBackoff(Node& node)
{
    node.backoff = static_cast<int>(m_random->GetInteger(0, node.cw));
}

bool
DcfMedium::Enqueue(int from, int to, Frame frame)
{
    Node& node = m_nodes[from];
    if (node.queued >= m_queuePackets)
    {
        DropExpired(node); // a full queue makes room by dropping what waited too long (ns-3's WifiMacQueue)
    }
    if (node.queued >= m_queuePackets)
    {
        node.counters.queueDrops++;
        return false;
    }
    size_t queue = from == kAp ? static_cast<size_t>(std::max(to, 0)) : 0;
    int64_t now = NowNs();
    node.queues[queue].push_back(Item{std::move(frame), now});
    if (node.queued++ > 0 || node.sending >= 0)
    {
        return true; // already contending
    }
    if (m_busy)
    {
        if (node.backoff == 0) // a frame that finds the medium busy defers with a fresh backoff
        {
            DrawBackoff(node);
        }
    }
    else if (TxTimeNs(node) < now)
    {
        // Its (post-)backoff ran out while it had nothing to send and the medium has been idle
        // for AIFS since: it may send without a backoff. The non-QoS DCF (a/g) senses the
        // medium for a DIFS from the frame's arrival first (as ns-3 does); an EDCA function
        // (n/ac) acts at slot boundaries only (802.11-2016 10.22.2.4), so it sends at the next
        // boundary of the idle medium's slots - and collides with any other node whose frame
        // arrived in the same slot, or whose backoff ends there.
        node.backoff = 0;
        if (m_phy.qos)
        {
            node.countFromNs += ((now - node.countFromNs) / SlotNs() + 1) * SlotNs();
        }
        else
        {
            node.countFromNs = now + Ns(m_phy.AifsUs());
        }
    }
    ScheduleAccess();
    return true;
}

void
DcfMedium::ScheduleAccess()
{
    if (m_busy)
    {
        return;
    }
    int64_t next = INT64_MAX;
    for (const Node& node : m_nodes)
    {
        if (node.queued > 0)
        {
            next = std::min(next, TxTimeNs(node));
        }
    }
    if (next == INT64_MAX)
    {
        return;
    }
    int64_t delay = std::max<int64_t>(0, next - NowNs());
    if (m_access.IsPending())
    {
        if (ns3::Simulator::GetDelayLeft(m_access).GetNanoSeconds() == delay)
        {
            return;
        }
        ns3::Simulator::Cancel(m_access);
    }
    m_access = ns3::Simulator::Schedule(ns3::NanoSeconds(delay), &DcfMedium::Access, this);
}

void
DcfMedium::DropHead(Node& node)
{
    std::deque<Item>& q = node.queues[node.sending];
    for (size_t i = 0; i < node.sendingCount && !q.empty(); ++i)
    {
        q.pop_front();
        node.queued--;
    }
    node.sending = -1;
    node.sendingCount = 0;
}

void
DcfMedium::DropExpired(Node& node)
{
    if (m_maxDelayNs <= 0)
    {
        return;
    }
    int64_t now = NowNs();
    for (size_t q = 0; q < node.queues.size(); ++q)
    {
        std::deque<Item>& queue = node.queues[q];
        // Frames on the air stay until their exchange ends; behind them the oldest come first.
        auto first = queue.begin() + (static_cast<int>(q) == node.sending ? node.sendingCount : 0);
        auto last = first;
        while (last != queue.end() && now - last->enqueuedNs > m_maxDelayNs)
        {
            ++last;
        }
        size_t dropped = last - first;
        queue.erase(first, last);
        node.queued -= dropped;
        node.counters.expired += dropped;
    }
}

double
DcfMedium::PreparePpdu(Node& node, bool& needsAck, bool& rts)
{
    if (node.barQueue >= 0)
    {
        if (!node.queues[node.barQueue].empty())
        {
            // After a missed block ACK the originator asks for it with a BlockAckReq before it
            // sends data again (ns-3's QosTxop UseExplicitBarAfterMissedBlockAck, on by default).
            node.sending = node.barQueue;
            node.sendingCount = 0;
            needsAck = true;
            rts = false;
            return m_phy.BlockAckRequestUs();
        }
        node.barQueue = -1;
    }
    int64_t now = NowNs();
    for (;;)
    {
        int best = -1;
        for (size_t q = 0; q < node.queues.size(); ++q)
        {
            if (!node.queues[q].empty() &&
                (best < 0 || node.queues[q].front().enqueuedNs < node.queues[best].front().enqueuedNs))
            {
                best = static_cast<int>(q);
            }
        }
        if (best < 0)
        {
            return 0;
        }
        std::deque<Item>& q = node.queues[best];
        if (m_maxDelayNs > 0 && now - q.front().enqueuedNs > m_maxDelayNs)
        {
            q.pop_front(); // waited too long (ns-3's WifiMacQueue MaxDelay)
            node.queued--;
            node.counters.expired++;
            continue;
        }
        node.sending = best;
        bool group = &node == &m_nodes[kAp] && best == 0;
        if (group)
        {
            node.sendingCount = 1;
            needsAck = false;
            rts = false;
            return m_phy.GroupPpduUs(q.front().frame.packet->GetSize());
        }
        needsAck = true;
        uint32_t psdu = m_phy.MpduBytes(q.front().frame.packet->GetSize());
        node.sendingCount = 1;
        if (m_phy.aggregation)
        {
            // A-MPDU: 4-byte delimiter per MPDU, every subframe but the last padded to 4 bytes.
            uint32_t padded = 0;
            size_t count = 0;
            size_t limit = std::min<size_t>(q.size(), m_phy.blockAckWindow);
            for (; count < limit; ++count)
            {
                uint32_t sub = 4 + m_phy.MpduBytes(q[count].frame.packet->GetSize());
                uint32_t total = padded + sub;
                if (count > 0 && (total > m_phy.maxAmpduBytes || m_phy.DataPpduUs(total) > m_phy.maxPpduUs))
                {
                    break;
                }
                psdu = total;
                padded += (sub + 3) & ~3u;
            }
            node.sendingCount = count;
            if (count == 1)
            {
                psdu = m_phy.MpduBytes(q.front().frame.packet->GetSize());
            }
        }
        rts = psdu > m_phy.rtsThresholdBytes;
        return m_phy.DataPpduUs(psdu);
    }
}

void
DcfMedium::Access()
{
    int64_t t0 = NowNs();
    int64_t slot = SlotNs();
    std::vector<int> senders;
    double longestUs = 0;  // of the colliding transmissions
    double exchangeUs = 0; // of a lone sender's whole exchange
    double dataEndUs = 0;  // when its data PPDU ends
    for (size_t i = 0; i < m_nodes.size(); ++i)
    {
        Node& node = m_nodes[i];
        if (node.queued == 0 || TxTimeNs(node) >= t0 + slot)
        {
            continue;
        }
        bool needsAck = false;
        bool rts = false;
        double ppduUs = PreparePpdu(node, needsAck, rts);
        if (ppduUs <= 0)
        {
            continue; // everything it had expired
        }
        senders.push_back(static_cast<int>(i));
        longestUs = std::max(longestUs, rts ? m_phy.RtsUs() : ppduUs);
        exchangeUs = ppduUs;
        if (rts)
        {
            exchangeUs += m_phy.RtsUs() + m_phy.sifsUs + m_phy.CtsUs() + m_phy.sifsUs;
        }
        dataEndUs = exchangeUs;
        if (needsAck)
        {
            exchangeUs += m_phy.sifsUs + (node.sendingCount != 1 ? m_phy.BlockAckUs() : m_phy.AckUs()); // 0: a BAR
        }
    }
    if (senders.empty())
    {
        ScheduleAccess();
        return;
    }
    // Everyone else freezes its backoff where the countdown got to. A DCF (a/g) counts a slot
    // at the end of each idle slot after DIFS; an EDCA function (n/ac) also at the slot boundary
    // that ends AIFS (802.11-2016 10.22.2.4; ns-3 counts the same): one slot more each time.
    bool edca = m_phy.qos;
    for (size_t i = 0; i < m_nodes.size(); ++i)
    {
        Node& node = m_nodes[i];
        if (node.sending < 0 && (t0 > node.countFromNs || (edca && t0 == node.countFromNs)))
        {
            int64_t counted = (t0 - node.countFromNs) / slot + (edca ? 1 : 0);
            node.backoff = static_cast<int>(std::max<int64_t>(0, node.backoff - counted));
        }
    }
    bool collided = senders.size() > 1;
    int64_t duration = Ns(collided ? longestUs : exchangeUs);
    m_busy = true;
    m_busyNs += duration;
    if (!collided && m_nodes[senders[0]].sendingCount > 0) // the receiver has the frames when the data PPDU ends
    {
        ns3::Simulator::Schedule(ns3::NanoSeconds(Ns(dataEndUs)), &DcfMedium::Deliver, this, senders[0]);
    }
    ns3::Simulator::Schedule(ns3::NanoSeconds(duration), &DcfMedium::EndExchange, this, senders, collided);
}

void
DcfMedium::Deliver(int sender)
{
    Node& node = m_nodes[sender];
    std::deque<Item>& q = node.queues[node.sending];
    bool group = sender == kAp && node.sending == 0;
    int to = sender == kAp ? (group ? -1 : node.sending) : kAp;
    std::vector<Frame> frames;
    for (size_t i = 0; i < node.sendingCount; ++i)
    {
        node.counters.txFrames++;
        node.counters.txBytes += q.front().frame.packet->GetSize();
        frames.push_back(std::move(q.front().frame));
        q.pop_front();
        node.queued--;
    }
    node.counters.exchanges++;
    node.sending = -1;
    node.sendingCount = 0;
    for (Frame& frame : frames)
    {
        m_deliver(sender, to, std::move(frame));
    }
}

void
DcfMedium::EndExchange(std::vector<int> senders, bool collided)
{
    m_busy = false;
    int64_t end = NowNs();
    for (Node& node : m_nodes)
    {
        node.countFromNs = end + Ns(m_phy.AifsUs());
    }
    for (int s : senders)
    {
        Node& node = m_nodes[s];
        bool group = s == kAp && node.sending == 0;
        if (!collided) // data: delivered already, at the end of its PPDU
        {
            node.retries = 0;
            node.cw = m_phy.cwMin;
            if (node.sending >= 0) // a BlockAckReq got its answer
            {
                node.barQueue = -1;
                node.sending = -1;
            }
        }
        else
        {
            node.counters.collisions++;
            // The colliders learn it only when the ACK (or CTS) does not come.
            node.countFromNs = end + Ns(m_phy.AckTimeoutUs() + m_phy.AifsUs());
            if (group) // no ACK, no retry: the frame is simply lost
            {
                DropHead(node);
            }
            else if (node.sendingCount > 1)
            {
                // An A-MPDU: its frames stay (in a block-ACK agreement they are not dropped for
                // retries, as in ns-3; they age out after the queue's max delay) and the next
                // access asks for the block ACK first.
                node.counters.retries += node.sendingCount;
                node.barQueue = node.sending;
                node.cw = std::min(2 * node.cw + 1, m_phy.cwMax);
                node.sending = -1;
                node.sendingCount = 0;
            }
            else if (++node.retries > m_phy.retryLimit)
            {
                if (node.sendingCount == 0) // gave up asking for the block ACK
                {
                    node.barQueue = -1;
                }
                node.counters.retryDrops += node.sendingCount;
                DropHead(node);
                node.retries = 0;
                node.cw = m_phy.cwMin;
            }
            else
            {
                node.counters.retries += node.sendingCount;
                node.cw = std::min(2 * node.cw + 1, m_phy.cwMax);
                node.sending = -1;
                node.sendingCount = 0;
            }
        }
        DrawBackoff(node); // the next frame's backoff, or post-backoff if the queue is empty
    }
    ScheduleAccess();
}

} // namespace rigemu
