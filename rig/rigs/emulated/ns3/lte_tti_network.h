// kind "lte_tti": the TTI-scheduled LTE cell (lte_tti.h) between station TAPs (the UEs) and
// one gateway TAP, bridged like `links`: frames keep their MAC addresses, stations' frames go
// up the cell to the gateway, the gateway's down to the station whose MAC sent them (learned;
// broadcast and unknown to every UE). Optional impairment pipes on top of the radio per station.
#pragma once

#include "json.h"
#include "lte_tti.h"
#include "station_star.h"

#include <memory>
#include <vector>

namespace rigemu
{

class LteTtiNetwork : public StationStar
{
  public:
    explicit LteTtiNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;

  private:
    void FromGateway(Frame frame) override;
    void FromStation(size_t index, Frame frame) override;
    void OutOfCell(size_t index, bool up, Frame frame, ns3::Time enqueued);
    void ToStation(size_t index, Frame frame) { m_cell->Enqueue(index, false, std::move(frame)); } // the cell's downlink

    std::unique_ptr<LteTtiCell> m_cell;
    std::vector<LteTtiCounters> m_reportedUp;
    std::vector<LteTtiCounters> m_reportedDown;
};

} // namespace rigemu
