// A real-time ns-3 simulator that runs on one thread and waits in epoll: for the next event's
// wall-clock time or for a frame on one of the TAPs, whichever comes first.
//
// Why not ns-3's RealtimeSimulatorImpl + FdNetDevice: there every TAP has a reader thread that
// wakes per frame and hands the frame to the simulator thread through a mutex and a condition
// variable, and the simulator sleeps on that condition variable between events. On a busy 2-core
// host those wake-ups (two context switches per frame, more under SCHED_FIFO) were most of the
// emulator's CPU (docs/emulator.md). Here a frame costs no thread hand-off, and every wake-up
// reads all frames waiting on every TAP.
#pragma once

#include "ns3/event-impl.h"
#include "ns3/object-factory.h"
#include "ns3/scheduler.h"
#include "ns3/simulator-impl.h"

#include <chrono>
#include <functional>
#include <list>
#include <vector>

namespace rigemu
{

class PollingRealtimeSimulatorImpl : public ns3::SimulatorImpl
{
  public:
    static ns3::TypeId GetTypeId();

    PollingRealtimeSimulatorImpl();
    ~PollingRealtimeSimulatorImpl() override;

    // The running instance (the simulator implementation must be this class).
    static PollingRealtimeSimulatorImpl& Get();

    // Calls `onReadable` on the simulator thread whenever `fd` (non-blocking) has data. The
    // handler reads what it wants and schedules events with ScheduleWallClockNow.
    void Watch(int fd, std::function<void()> onReadable);

    // Schedules `event` at the current wall-clock time (never before Now()): a frame that was
    // just read arrived now, however far behind the simulated clock is.
    ns3::EventId ScheduleWallClockNow(uint32_t context, ns3::EventImpl* event);

    // Nanoseconds of wall clock since simulated time 0 (while Run() runs): an event scheduled
    // at this simulated time is due now.
    uint64_t WallClockNs() const { return WallNs(); }

    // While events are due back to back, the TAPs are still checked at least this often.
    void SetPollInterval(ns3::Time interval) { m_pollIntervalNs = interval.GetNanoSeconds(); }

    // Sleeps until the next event is this late at most, so events close in time share one
    // wake-up (each costs tens of us of kernel time on this host). The lag log counts it.
    void SetWakeSlack(ns3::Time slack) { m_wakeSlackNs = static_cast<uint64_t>(slack.GetNanoSeconds()); }

    // The longest stretch of wall clock (ns) spent running events back to back, without going
    // idle, since the last call; then starts over. Tells a model that cannot keep up (long
    // stretches) from a host that did not schedule the emulator (short ones, yet late).
    uint64_t TakeLongestBusyNs();

    void Destroy() override;
    bool IsFinished() const override;
    void Stop() override;
    ns3::EventId Stop(const ns3::Time& delay) override;
    ns3::EventId Schedule(const ns3::Time& delay, ns3::EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const ns3::Time& delay, ns3::EventImpl* event) override;
    ns3::EventId ScheduleNow(ns3::EventImpl* event) override;
    ns3::EventId ScheduleDestroy(ns3::EventImpl* event) override;
    void Remove(const ns3::EventId& id) override;
    void Cancel(const ns3::EventId& id) override;
    bool IsExpired(const ns3::EventId& id) const override;
    void Run() override;
    ns3::Time Now() const override;
    ns3::Time GetDelayLeft(const ns3::EventId& id) const override;
    ns3::Time GetMaximumSimulationTime() const override;
    void SetScheduler(ns3::ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override { return 0; }
    uint32_t GetContext() const override { return m_currentContext; }
    uint64_t GetEventCount() const override { return m_eventCount; }

  private:
    void DoDispose() override;

    ns3::EventId Insert(uint64_t ts, uint32_t context, ns3::EventImpl* event);
    // Nanoseconds of wall clock since Run() started; simulated time 0 is that instant.
    uint64_t WallNs() const;
    // Waits up to `timeoutNs` (0: just looks) for TAP data and runs the handlers of ready fds.
    void Poll(uint64_t timeoutNs);
    void RunOne();

    ns3::Ptr<ns3::Scheduler> m_events;
    std::list<ns3::EventId> m_destroyEvents;
    std::vector<std::function<void()>> m_handlers; // by index in the epoll set
    int m_epoll = -1;
    std::chrono::steady_clock::time_point m_origin;
    bool m_running = false;
    bool m_stop = false;
    uint64_t m_currentTs = 0;
    uint32_t m_currentUid = 0;
    uint32_t m_currentContext = 0xffffffff; // ns-3's "no context"
    uint32_t m_nextUid = 4;                 // ns-3 reserves 0-3 (2: destroy events)
    uint64_t m_eventCount = 0;
    int64_t m_pollIntervalNs = 200000;
    uint64_t m_wakeSlackNs = 0;
    uint64_t m_lastPollNs = 0;
    uint64_t m_busySinceNs = 0; // when the current busy stretch began
    uint64_t m_longestBusyNs = 0;
};

} // namespace rigemu
