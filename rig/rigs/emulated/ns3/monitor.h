// Measures how far the real-time simulator lags behind the wall clock and writes the logs.
#pragma once

#include "network.h"

#include "ns3/nstime.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace rigemu
{

class Monitor
{
  public:
    // Samples lateness every `interval` of simulated time; once per simulated second appends a
    // line to the lag log and the network's counters to the stats log. `stopRequested` and
    // `flushRequested` are polled at every sample: a signal stops the simulator, or writes the
    // lag of the second so far (a shorter window; the stats stay per second), within one interval.
    Monitor(const std::string& lagLog,
            const std::string& statsLog,
            ns3::Time interval,
            RadioNetwork& network,
            std::function<bool()> stopRequested,
            std::function<bool()> flushRequested);
    ~Monitor();

    void Start();

  private:
    void Sample();
    void WriteLag(double unixTime); // the lag samples since the last line, as one line ending now
    double CpuShare();

    std::FILE* m_lag;
    std::FILE* m_stats;
    ns3::Time m_interval;
    RadioNetwork& m_network;
    std::function<bool()> m_stopRequested;
    std::function<bool()> m_flushRequested;
    double m_windowStart = 0; // unix time the lag samples not yet written began
    std::chrono::steady_clock::time_point m_origin;
    std::vector<double> m_latenessMs;
    ns3::Time m_nextSecond;
    double m_lastCpuS = 0;
    std::chrono::steady_clock::time_point m_lastCpuAt;
};

} // namespace rigemu
