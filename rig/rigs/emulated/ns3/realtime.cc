#include "realtime.h"

#include "ns3/make-event.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <sys/epoll.h>
#include <thread>
#include <unistd.h>

namespace rigemu
{

NS_OBJECT_ENSURE_REGISTERED(PollingRealtimeSimulatorImpl);

namespace
{

std::thread::id g_simulatorThread;

} // namespace

ns3::TypeId
PollingRealtimeSimulatorImpl::GetTypeId()
{
    static ns3::TypeId tid = ns3::TypeId("rigemu::PollingRealtimeSimulatorImpl")
                                 .SetParent<ns3::SimulatorImpl>()
                                 .SetGroupName("Core")
                                 .AddConstructor<PollingRealtimeSimulatorImpl>();
    return tid;
}

PollingRealtimeSimulatorImpl::PollingRealtimeSimulatorImpl()
{
    // Event times are wall-clock nanoseconds; other resolutions would need a conversion.
    if (ns3::Time::GetResolution() != ns3::Time::NS)
    {
        throw std::runtime_error("the polling real-time simulator needs ns-3's default time resolution (ns)");
    }
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    if (m_epoll < 0)
    {
        throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    }
    g_simulatorThread = std::this_thread::get_id();
}

PollingRealtimeSimulatorImpl::~PollingRealtimeSimulatorImpl()
{
    if (m_epoll >= 0)
    {
        close(m_epoll);
    }
}

PollingRealtimeSimulatorImpl&
PollingRealtimeSimulatorImpl::Get()
{
    auto* impl = dynamic_cast<PollingRealtimeSimulatorImpl*>(ns3::PeekPointer(ns3::Simulator::GetImplementation()));
    if (!impl)
    {
        throw std::runtime_error("the simulator implementation is not rigemu::PollingRealtimeSimulatorImpl");
    }
    return *impl;
}

void
PollingRealtimeSimulatorImpl::Watch(int fd, std::function<void()> onReadable)
{
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(m_handlers.size());
    if (epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev) < 0)
    {
        throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
    }
    m_handlers.push_back(std::move(onReadable));
}

uint64_t
PollingRealtimeSimulatorImpl::WallNs() const
{
    auto elapsed = std::chrono::steady_clock::now() - m_origin;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}

void
PollingRealtimeSimulatorImpl::Poll(uint64_t timeoutNs)
{
    epoll_event ready[16];
    timespec timeout{static_cast<time_t>(timeoutNs / 1000000000ull), static_cast<long>(timeoutNs % 1000000000ull)};
    int n = epoll_pwait2(m_epoll, ready, 16, &timeout, nullptr);
    for (int i = 0; i < n; ++i) // n < 0 (EINTR: a signal) reads nothing; the loop goes on
    {
        m_handlers[ready[i].data.u32]();
    }
}

void
PollingRealtimeSimulatorImpl::Run()
{
    g_simulatorThread = std::this_thread::get_id();
    m_origin = std::chrono::steady_clock::now() - std::chrono::nanoseconds(m_currentTs);
    m_running = true;
    m_stop = false;
    m_lastPollNs = m_currentTs;
    m_busySinceNs = WallNs();
    while (!m_stop && !m_events->IsEmpty())
    {
        uint64_t next = m_events->PeekNext().key.m_ts;
        uint64_t wall = WallNs();
        if (next > wall)
        {
            m_longestBusyNs = std::max(m_longestBusyNs, wall - m_busySinceNs);
            Poll(next - wall + m_wakeSlackNs); // idle: sleep until the event is due or a frame arrives
            m_lastPollNs = wall;
            m_busySinceNs = WallNs();
        }
        else if (static_cast<int64_t>(wall - m_lastPollNs) >= m_pollIntervalNs)
        {
            Poll(0); // busy: frames waiting on a TAP get their wall-clock time stamp
            m_lastPollNs = wall;
        }
        else
        {
            RunOne();
        }
    }
    m_running = false;
}

uint64_t
PollingRealtimeSimulatorImpl::TakeLongestBusyNs()
{
    uint64_t wall = WallNs();
    uint64_t longest = std::max(m_longestBusyNs, wall > m_busySinceNs ? wall - m_busySinceNs : 0);
    m_longestBusyNs = 0;
    m_busySinceNs = wall; // a stretch in progress counts on from here in the next interval
    return longest;
}

void
PollingRealtimeSimulatorImpl::RunOne()
{
    ns3::Scheduler::Event next = m_events->RemoveNext();
    m_currentTs = next.key.m_ts;
    m_currentContext = next.key.m_context;
    m_currentUid = next.key.m_uid;
    m_eventCount++;
    next.impl->Invoke(); // a cancelled event does nothing
    next.impl->Unref();
}

ns3::EventId
PollingRealtimeSimulatorImpl::Insert(uint64_t ts, uint32_t context, ns3::EventImpl* event)
{
    if (std::this_thread::get_id() != g_simulatorThread)
    {
        // Nothing in this emulator schedules from another thread (no reader threads); fail loudly.
        std::fprintf(stderr, "radio-emulator: event scheduled from a foreign thread\n");
        std::abort();
    }
    ns3::Scheduler::Event ev;
    ev.impl = event;
    ev.key.m_ts = ts;
    ev.key.m_context = context;
    ev.key.m_uid = m_nextUid++;
    m_events->Insert(ev);
    return ns3::EventId(event, ts, context, ev.key.m_uid);
}

ns3::EventId
PollingRealtimeSimulatorImpl::Schedule(const ns3::Time& delay, ns3::EventImpl* event)
{
    return Insert(m_currentTs + delay.GetTimeStep(), m_currentContext, event);
}

void
PollingRealtimeSimulatorImpl::ScheduleWithContext(uint32_t context, const ns3::Time& delay, ns3::EventImpl* event)
{
    Insert(m_currentTs + delay.GetTimeStep(), context, event);
}

ns3::EventId
PollingRealtimeSimulatorImpl::ScheduleNow(ns3::EventImpl* event)
{
    return Insert(m_currentTs, m_currentContext, event);
}

ns3::EventId
PollingRealtimeSimulatorImpl::ScheduleWallClockNow(uint32_t context, ns3::EventImpl* event)
{
    uint64_t ts = m_running ? std::max(m_currentTs, WallNs()) : m_currentTs;
    return Insert(ts, context, event);
}

ns3::EventId
PollingRealtimeSimulatorImpl::ScheduleDestroy(ns3::EventImpl* event)
{
    ns3::EventId id(ns3::Ptr<ns3::EventImpl>(event, false), m_currentTs, 0xffffffff, ns3::EventId::DESTROY);
    m_destroyEvents.push_back(id);
    return id;
}

void
PollingRealtimeSimulatorImpl::Stop()
{
    m_stop = true;
}

ns3::EventId
PollingRealtimeSimulatorImpl::Stop(const ns3::Time& delay)
{
    return Schedule(delay, ns3::MakeEvent([this]() { m_stop = true; }));
}

void
PollingRealtimeSimulatorImpl::Remove(const ns3::EventId& id)
{
    if (id.GetUid() == ns3::EventId::DESTROY)
    {
        m_destroyEvents.remove(id);
        id.PeekEventImpl()->Cancel();
        return;
    }
    if (IsExpired(id))
    {
        return;
    }
    ns3::Scheduler::Event ev;
    ev.impl = id.PeekEventImpl();
    ev.key.m_ts = id.GetTs();
    ev.key.m_context = id.GetContext();
    ev.key.m_uid = id.GetUid();
    m_events->Remove(ev);
    ev.impl->Cancel();
    ev.impl->Unref(); // the queue's reference
}

void
PollingRealtimeSimulatorImpl::Cancel(const ns3::EventId& id)
{
    if (!IsExpired(id))
    {
        id.PeekEventImpl()->Cancel();
    }
}

bool
PollingRealtimeSimulatorImpl::IsExpired(const ns3::EventId& id) const
{
    ns3::EventImpl* impl = id.PeekEventImpl();
    if (impl == nullptr || impl->IsCancelled())
    {
        return true;
    }
    if (id.GetUid() == ns3::EventId::DESTROY)
    {
        for (const auto& pending : m_destroyEvents)
        {
            if (pending == id)
            {
                return false;
            }
        }
        return true;
    }
    return id.GetTs() < m_currentTs || (id.GetTs() == m_currentTs && id.GetUid() <= m_currentUid);
}

ns3::Time
PollingRealtimeSimulatorImpl::Now() const
{
    return ns3::TimeStep(m_currentTs);
}

ns3::Time
PollingRealtimeSimulatorImpl::GetDelayLeft(const ns3::EventId& id) const
{
    return IsExpired(id) ? ns3::TimeStep(0) : ns3::TimeStep(id.GetTs() - m_currentTs);
}

ns3::Time
PollingRealtimeSimulatorImpl::GetMaximumSimulationTime() const
{
    return ns3::TimeStep(0x7fffffffffffffffLL);
}

bool
PollingRealtimeSimulatorImpl::IsFinished() const
{
    return m_stop || m_events->IsEmpty();
}

void
PollingRealtimeSimulatorImpl::SetScheduler(ns3::ObjectFactory schedulerFactory)
{
    ns3::Ptr<ns3::Scheduler> scheduler = schedulerFactory.Create<ns3::Scheduler>();
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            scheduler->Insert(m_events->RemoveNext());
        }
    }
    m_events = scheduler;
}

void
PollingRealtimeSimulatorImpl::Destroy()
{
    while (!m_destroyEvents.empty())
    {
        ns3::Ptr<ns3::EventImpl> ev = m_destroyEvents.front().PeekEventImpl();
        m_destroyEvents.pop_front();
        ev->Invoke();
    }
}

void
PollingRealtimeSimulatorImpl::DoDispose()
{
    while (m_events && !m_events->IsEmpty())
    {
        m_events->RemoveNext().impl->Unref();
    }
    m_events = nullptr;
    SimulatorImpl::DoDispose();
}

} // namespace rigemu
