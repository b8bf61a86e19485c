#include "monitor.h"

#include "realtime.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <time.h>

namespace rigemu
{

namespace
{

std::FILE*
OpenLog(const std::string& path)
{
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (!f)
    {
        throw std::runtime_error("cannot open log " + path);
    }
    return f;
}

double
UnixNow()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

double
Percentile(const std::vector<double>& sorted, double q)
{
    size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
    return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace

double
Monitor::CpuShare()
{
    // CPU time of the whole process (its one thread plus the kernel work done on its behalf,
    // e.g. delivering the frames it writes) per wall second since the last call.
    timespec cpu{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    double cpuS = cpu.tv_sec + cpu.tv_nsec / 1e9;
    auto now = std::chrono::steady_clock::now();
    double share = (cpuS - m_lastCpuS) / std::chrono::duration<double>(now - m_lastCpuAt).count();
    m_lastCpuS = cpuS;
    m_lastCpuAt = now;
    return share;
}

Monitor::Monitor(const std::string& lagLog,
                 const std::string& statsLog,
                 ns3::Time interval,
                 RadioNetwork& network,
                 std::function<bool()> stopRequested,
                 std::function<bool()> flushRequested)
    : m_lag(OpenLog(lagLog)),
      m_stats(OpenLog(statsLog)),
      m_interval(interval),
      m_network(network),
      m_stopRequested(std::move(stopRequested)),
      m_flushRequested(std::move(flushRequested))
{
}

Monitor::~Monitor()
{
    std::fclose(m_lag);
    std::fclose(m_stats);
}

void
Monitor::Start()
{
    // The real-time simulator starts its wall clock when Run() begins, which is when this
    // first event at t=0 runs; lateness is measured against that origin.
    ns3::Simulator::ScheduleNow([this]() {
        m_origin = std::chrono::steady_clock::now() -
                   std::chrono::nanoseconds(ns3::Simulator::Now().GetNanoSeconds());
        m_nextSecond = ns3::Seconds(1);
        CpuShare(); // the first second's share counts from here
        m_windowStart = UnixNow();
        Sample();
    });
}

void
Monitor::Sample()
{
    auto wall = std::chrono::steady_clock::now() - m_origin;
    double lateMs = (std::chrono::duration<double, std::milli>(wall).count() -
                     ns3::Simulator::Now().GetSeconds() * 1e3);
    m_latenessMs.push_back(std::max(0.0, lateMs));
    bool flush = m_flushRequested(); // polled every sample: it also clears the request
    bool secondOver = ns3::Simulator::Now() >= m_nextSecond;
    if (secondOver || flush)
    {
        double t = UnixNow();
        WriteLag(t);
        if (secondOver) // the stats stay per second
        {
            m_network.WriteStats(m_stats, t);
            std::fflush(m_stats);
            m_nextSecond += ns3::Seconds(1);
        }
    }
    if (m_stopRequested())
    {
        ns3::Simulator::Stop();
        return;
    }
    ns3::Simulator::Schedule(m_interval, &Monitor::Sample, this);
}

void
Monitor::WriteLag(double t)
{
    std::vector<double> sorted(m_latenessMs);
    m_latenessMs.clear();
    std::sort(sorted.begin(), sorted.end());
    if (!sorted.empty())
    {
        std::fprintf(m_lag,
                     "{\"since\": %.6f, \"t\": %.6f, \"n\": %zu, \"p50_ms\": %.3f, \"p99_ms\": %.3f, "
                     "\"max_ms\": %.3f, \"busy_max_ms\": %.3f, \"cpu\": %.3f}\n",
                     m_windowStart,
                     t,
                     sorted.size(),
                     Percentile(sorted, 0.5),
                     Percentile(sorted, 0.99),
                     sorted.back(),
                     PollingRealtimeSimulatorImpl::Get().TakeLongestBusyNs() / 1e6,
                     CpuShare());
        std::fflush(m_lag);
    }
    m_windowStart = t;
}

} // namespace rigemu
