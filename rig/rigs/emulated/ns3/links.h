// kind "links": a star of per-station pipes between one gateway TAP and N station TAPs,
// optionally behind one shared medium server (a crude half-duplex channel).
#pragma once

#include "json.h"
#include "pipe.h"
#include "station_star.h"

#include <memory>
#include <vector>

namespace rigemu
{

class LinksNetwork : public StationStar
{
  public:
    explicit LinksNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;

  private:
    // A station's pipes: both always there (their counters are the station's stats line).
    struct Link
    {
        Pipe* up;
        Pipe* down;
        PipeCounters upReported;
        PipeCounters downReported;
    };

    void FromGateway(Frame frame) override;
    void FromStation(size_t index, Frame frame) override;
    void Send(Frame frame, std::initializer_list<Pipe*> route, ns3::Ptr<ns3::NetDevice> out);

    std::unique_ptr<Pipe> m_medium; // null when the network has no shared medium
    PipeCounters m_mediumReported;
    std::vector<Link> m_links;
};

} // namespace rigemu
