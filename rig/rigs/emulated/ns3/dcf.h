// kind "dcf": one WiFi BSS as a per-frame 802.11 DCF medium (dcf_medium.h) instead of ns-3's
// WiFi model: the same profile fields as kind "wifi" (standard, band, width), the same air
// time per frame and contention, at a small fraction of the CPU (no PHY reception, no
// per-receiver work). The gateway TAP is the AP's wired side; each station TAP is a station.
#pragma once

#include "dcf_medium.h"
#include "json.h"
#include "station_star.h"

#include <memory>
#include <vector>

namespace rigemu
{

class DcfNetwork : public StationStar
{
  public:
    explicit DcfNetwork(const Json& config);

    void WriteStats(std::FILE* out, double unixTime) override;

  private:
    void FromGateway(Frame frame) override { ApSend(std::move(frame)); }
    void FromStation(size_t station, Frame frame) override { ToRadio(station, std::move(frame)); }
    void FromAir(int from, int to, Frame&& frame);
    // The AP's downlink towards `dst` (a station's MAC; group or unknown: every station).
    void ApSend(Frame frame);

    std::unique_ptr<DcfMedium> m_medium; // its node i + 1 is station i, node 0 the AP
    std::vector<DcfCounters> m_reported; // per node, as of the last stats line
    double m_reportedBusyS = 0;
};

} // namespace rigemu
