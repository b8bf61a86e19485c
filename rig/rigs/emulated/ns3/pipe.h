// A FIFO link server: drop-tail queue, serialisation at a rate, then delay + jitter + loss.
// Frames may cross several pipes in a row (shared medium, then a station's own link).
#pragma once

#include "json.h"

#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rigemu
{

class Pipe;

// An Ethernet frame in flight: the payload (Ethernet header stripped by the TapNetDevice), its
// addresses, and the route still ahead of it. At the end of the route it is handed to `out`
// (with its original source address where the device can send from any address).
struct Frame
{
    ns3::Ptr<ns3::Packet> packet;
    ns3::Mac48Address src;
    ns3::Mac48Address dst;
    uint16_t protocol = 0;
    std::array<Pipe*, 4> hops{};
    size_t nHops = 0;
    size_t next = 0;
    ns3::Ptr<ns3::NetDevice> out;

    // A frame as a device's receive callback reports it (the payload is copied).
    static Frame Of(ns3::Ptr<const ns3::Packet> packet,
                    const ns3::Address& from,
                    const ns3::Address& to,
                    uint16_t protocol);

    uint32_t WireBytes() const { return packet->GetSize() + 14; }

    void Forward(); // to the next hop, or out of the emulator
};

struct PipeConfig
{
    double rateBps = 0;  // 0: no serialisation limit
    double delayS = 0;
    double jitterS = 0;  // uniform extra delay in [0, jitter]; FIFO order is kept
    double loss = 0;     // probability a frame is lost after it used the link
    uint32_t queuePackets = 50;
};

// {"rate_bps", "delay_s", "jitter_s", "loss", "queue_packets"} from the config.
PipeConfig PipeConfigFrom(const Json& pipe);

// A rate profile in Mahimahi's format: delivery opportunities at millisecond offsets within one
// period, repeated for ever. Each opportunity carries one full-size frame (1514 bytes on the
// wire: a 1500-byte packet and its Ethernet header); bytes not used while the queue is empty
// are lost, a frame larger than what is left waits for the next opportunity.
struct Trace
{
    std::vector<uint32_t> ms; // sorted, every value in (0, periodMs]
    uint32_t periodMs = 0;

    static constexpr uint32_t kOpportunityBytes = 1514;
};

// One integer (ms) per line, non-decreasing, the last > 0 (rig/rigs/emulated/control.py checks the
// user's file and writes it out this way). Throws std::runtime_error naming the file.
std::shared_ptr<const Trace> LoadTrace(const std::string& path);

// A change made to a running pipe; fields left unset keep their value.
struct PipeUpdate
{
    std::optional<double> rateBps; // also ends a trace
    std::optional<double> delayS;
    std::optional<double> jitterS;
    std::optional<double> loss;
    std::optional<uint32_t> queuePackets;
    std::optional<bool> up;             // false: cut (every frame dropped), true: restored
    std::shared_ptr<const Trace> trace; // set: the rate follows the trace from now on
};

struct PipeCounters
{
    uint64_t frames = 0; // delivered
    uint64_t bytes = 0;  // delivered, Ethernet header included
    uint64_t queueDrops = 0;
    uint64_t lossDrops = 0;
    uint64_t tapDrops = 0; // delivered, then refused by the TAP it was written to (interface down)
};

class Pipe
{
  public:
    Pipe(const PipeConfig& config, ns3::Ptr<ns3::UniformRandomVariable> random);

    void Enqueue(Frame frame);

    const PipeCounters& Counters() const { return m_counters; }

    void CountTapDrop() { m_counters.tapDrops++; }

    size_t QueueLength() const { return m_queue.size(); }

    // Runtime control (rig/rigs/emulated/control.py): takes effect now. A frame being serialised
    // finishes at the old rate; a cut drops the queue and the frames still in flight.
    void Apply(const PipeUpdate& update);

  private:
    void StartNext();
    void EndTransmission();
    void TraceOpportunity(uint32_t count);
    void Depart(Frame frame); // left the server: loss, then delay + jitter
    void Deliver(Frame frame);
    void Restart(); // drops the pending service event and starts serving again in the new mode

    // The first trace opportunity at or after `at`, and how many opportunities share that instant.
    std::pair<ns3::Time, uint32_t> NextOpportunity(ns3::Time at) const;

    PipeConfig m_config;
    ns3::Ptr<ns3::UniformRandomVariable> m_random;
    std::deque<Frame> m_queue; // front is on the wire while m_busy
    bool m_busy = false;
    ns3::Time m_lastDelivery; // keeps jittered deliveries in FIFO order
    PipeCounters m_counters;
    ns3::EventId m_service; // the pending end of transmission, or trace opportunity
    bool m_up = true;       // false: cut
    std::shared_ptr<const Trace> m_trace; // set: the rate follows it (m_config.rateBps unused)
    ns3::Time m_traceOrigin;
    uint32_t m_credit = 0; // bytes of opportunities the queue has not used yet
};

} // namespace rigemu
