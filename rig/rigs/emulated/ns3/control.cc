#include "control.h"

#include "realtime.h"

#include "ns3/simulator.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace rigemu
{

namespace
{

double
UnixNow()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string
Escape(const std::string& text)
{
    std::string out;
    for (char c : text)
    {
        if (c == '"' || c == '\\')
        {
            out += '\\';
        }
        out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
    return out;
}

// The change as JSON members (", \"rate_bps\": ..."), for the applied line.
std::string
Members(const PipeUpdate& u, const std::string& tracePath)
{
    std::string out;
    char buf[64];
    auto num = [&](const char* key, const std::optional<double>& v) {
        if (v)
        {
            std::snprintf(buf, sizeof buf, ", \"%s\": %.9g", key, *v);
            out += buf;
        }
    };
    num("rate_bps", u.rateBps);
    num("delay_s", u.delayS);
    num("jitter_s", u.jitterS);
    num("loss", u.loss);
    if (u.queuePackets)
    {
        out += ", \"queue_packets\": " + std::to_string(*u.queuePackets);
    }
    if (u.up)
    {
        out += std::string(", \"state\": \"") + (*u.up ? "up" : "down") + "\"";
    }
    if (!tracePath.empty())
    {
        out += ", \"trace\": \"" + Escape(tracePath) + "\"";
    }
    return out;
}

} // namespace

Control::Control(const std::string& fifoPath, const std::string& logPath, RadioNetwork& network)
    : m_fifoPath(fifoPath),
      m_network(network)
{
    unlink(fifoPath.c_str());
    if (mkfifo(fifoPath.c_str(), 0600) != 0)
    {
        throw std::runtime_error("mkfifo " + fifoPath + ": " + std::strerror(errno));
    }
    // Read-write: the FIFO always has a writer (us), so it never reports end-of-file when a
    // controller closes it, and a controller's open never blocks.
    m_fd = open(fifoPath.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (m_fd < 0)
    {
        throw std::runtime_error("open " + fifoPath + ": " + std::strerror(errno));
    }
    m_log = std::fopen(logPath.c_str(), "a");
    if (!m_log)
    {
        throw std::runtime_error("cannot open log " + logPath);
    }
    PollingRealtimeSimulatorImpl::Get().Watch(m_fd, [this]() { OnReadable(); });
}

Control::~Control()
{
    if (m_fd >= 0)
    {
        close(m_fd);
    }
    unlink(m_fifoPath.c_str());
    if (m_log)
    {
        std::fclose(m_log);
    }
}

void
Control::OnReadable()
{
    char buf[4096];
    ssize_t n;
    while ((n = read(m_fd, buf, sizeof buf)) > 0)
    {
        m_pending.append(buf, static_cast<size_t>(n));
    }
    size_t end;
    while ((end = m_pending.find('\n')) != std::string::npos)
    {
        std::string line = m_pending.substr(0, end);
        m_pending.erase(0, end + 1);
        if (!line.empty())
        {
            Handle(line);
        }
    }
}

void
Control::Handle(const std::string& line)
{
    Command c;
    try
    {
        Json j = Json::Parse(line);
        c.id = j.Str("id");
        c.at = j.Num("at");
        c.tap = j.Str("tap");
        c.direction = j.Str("direction");
        if (c.direction != "up" && c.direction != "down" && c.direction != "both")
        {
            throw std::runtime_error("direction must be up, down or both");
        }
        if (!m_network.HasStation(c.tap))
        {
            throw std::runtime_error("no station TAP " + c.tap);
        }
        auto opt = [&](const char* key) {
            return j.Has(key) ? std::optional<double>(j.Num(key)) : std::nullopt;
        };
        c.update.rateBps = opt("rate_bps");
        c.update.delayS = opt("delay_s");
        c.update.jitterS = opt("jitter_s");
        c.update.loss = opt("loss");
        if (j.Has("queue_packets"))
        {
            c.update.queuePackets = static_cast<uint32_t>(j.Num("queue_packets"));
        }
        if (j.Has("state"))
        {
            std::string state = j.Str("state");
            if (state != "up" && state != "down")
            {
                throw std::runtime_error("state must be up or down");
            }
            c.update.up = state == "up";
        }
        if (j.Has("trace"))
        {
            c.tracePath = j.Str("trace");
            c.update.trace = LoadTrace(c.tracePath); // now, not when the change is due
        }
    }
    catch (const std::exception& e)
    {
        Log("{\"id\": \"" + Escape(c.id) + "\", \"status\": \"error\", \"error\": \"" + Escape(e.what()) + "\"}");
        return;
    }
    // Unix time -> simulated time: the simulator's clock is the wall clock since its start.
    auto& sim = PollingRealtimeSimulatorImpl::Get();
    int64_t due = static_cast<int64_t>(sim.WallClockNs()) + std::llround((c.at - UnixNow()) * 1e9);
    int64_t delay = std::max<int64_t>(0, due - ns3::Simulator::Now().GetNanoSeconds());
    ns3::Simulator::Schedule(ns3::NanoSeconds(delay), &Control::Apply, this, c);
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"id\": \"%s\", \"status\": \"scheduled\", \"planned\": %.6f}", Escape(c.id).c_str(), c.at);
    Log(buf);
}

void
Control::Apply(const Command& c)
{
    for (bool up : {true, false})
    {
        if (c.direction == "both" || (c.direction == "up") == up)
        {
            m_network.StationPipe(c.tap, up)->Apply(c.update);
        }
    }
    double actual = UnixNow();
    char buf[256];
    std::snprintf(buf,
                  sizeof buf,
                  "{\"id\": \"%s\", \"status\": \"applied\", \"planned\": %.6f, \"actual\": %.6f, "
                  "\"late_ms\": %.3f, \"tap\": \"%s\", \"direction\": \"%s\"",
                  Escape(c.id).c_str(),
                  c.at,
                  actual,
                  (actual - c.at) * 1e3,
                  Escape(c.tap).c_str(),
                  c.direction.c_str());
    Log(buf + Members(c.update, c.tracePath) + "}");
}

void
Control::Log(const std::string& json)
{
    std::fprintf(m_log, "%s\n", json.c_str());
    std::fflush(m_log);
}

} // namespace rigemu
