// radio-emulator: one real-time ns-3 process per radio network, bridging a gateway TAP and
// station TAPs. Started by rig/rigs/emulated/radio.py as `ip netns exec NS radio-emulator --config FILE`.
// Prints READY once every TAP is open and the simulator runs; SIGTERM/SIGINT end it cleanly.

#include "control.h"
#include "dcf.h"
#include "dcf_calibrate.h"
#include "json.h"
#include "links.h"
#include "lte.h"
#include "lte_calibrate.h"
#include "lte_tti_network.h"
#include "wifi.h"
#include "monitor.h"
#include "realtime.h"

#include "ns3/boolean.h"
#include "ns3/global-value.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <csignal>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <memory>
#include <sched.h>
#include <sys/prctl.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace
{

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_flushLag = 0;

void
OnSignal(int)
{
    g_stop = 1;
}

// SIGUSR1: write the lag of the second in progress now (a run that just ended wants its lag
// without waiting for the second to end).
void
OnFlushLag(int)
{
    g_flushLag = 1;
}

std::unique_ptr<rigemu::RadioNetwork>
MakeNetwork(const rigemu::Json& config)
{
    std::string kind = config.Str("kind");
    if (kind == "links")
    {
        return std::make_unique<rigemu::LinksNetwork>(config);
    }
    if (kind == "lte")
    {
        return std::make_unique<rigemu::LteNetwork>(config);
    }
    if (kind == "lte_tti")
    {
        return std::make_unique<rigemu::LteTtiNetwork>(config);
    }
    if (kind == "wifi")
    {
        return std::make_unique<rigemu::WifiNetwork>(config);
    }
    if (kind == "dcf")
    {
        return std::make_unique<rigemu::DcfNetwork>(config);
    }
    throw std::runtime_error("kind '" + kind + "' is not supported by this build");
}

// A busy shared host delays the simulator's wake-ups by milliseconds under normal scheduling;
// SCHED_FIFO keeps its lag well below 1 ms (docs/emulator.md). The emulator has one thread (TAPs
// are polled by the simulator loop). Without the privilege it only warns: lag is measured anyway.
void
SetRealtimePriority(int priority)
{
    if (priority <= 0)
    {
        prctl(PR_SET_TIMERSLACK, 1UL); // wake at the event's time, not up to 50 us later
        return;
    }
    sched_param param{};
    param.sched_priority = priority;
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0)
    {
        std::fprintf(stderr, "radio-emulator: warning: SCHED_FIFO %d: %s\n", priority, std::strerror(errno));
    }
}

// Tells the parent we are up, then detaches stdout: the parent may exit and close the pipe,
// and nothing may ever write to it again.
void
AnnounceReady()
{
    std::printf("READY\n");
    std::fflush(stdout);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0)
    {
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
}

} // namespace

int
main(int argc, char** argv)
{
    std::string configPath;
    for (int i = 1; i + 1 < argc; ++i)
    {
        if (std::strcmp(argv[i], "--calibrate") == 0) // LTE models in simulated time (lte_calibrate.h)
        {
            return rigemu::RunLteCalibration(argv[i + 1]);
        }
        if (std::strcmp(argv[i], "--config") == 0)
        {
            configPath = argv[i + 1];
        }
    }
    if (argc == 3 && std::strcmp(argv[1], "--calibrate-wifi") == 0)
    {
        return rigemu::RunCalibration(argv[2]); // not real time: scripts/calibrate_wifi.py
    }
    if (configPath.empty())
    {
        std::fprintf(stderr, "usage: %s --config FILE.json\n", argv[0]);
        return 2;
    }
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);
    std::signal(SIGUSR1, OnFlushLag);
    std::signal(SIGPIPE, SIG_IGN);
    try
    {
        rigemu::Json config = rigemu::Json::ParseFile(configPath);
        SetRealtimePriority(static_cast<int>(config.Num("realtime_priority", 0)));
        ns3::GlobalValue::Bind("SimulatorImplementationType",
                               ns3::StringValue("rigemu::PollingRealtimeSimulatorImpl"));
        ns3::GlobalValue::Bind("ChecksumEnabled", ns3::BooleanValue(true));
        ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(config.Num("seed", 1)));
        auto& simulator = rigemu::PollingRealtimeSimulatorImpl::Get();
        simulator.SetWakeSlack(ns3::Seconds(config.Num("wake_slack_s", 0.0)));
        auto network = MakeNetwork(config);
        rigemu::Monitor monitor(config.Str("lag_log"),
                                config.Str("stats_log"),
                                ns3::Seconds(config.Num("lag_interval_s", 0.001)),
                                *network,
                                []() { return g_stop != 0; },
                                []() {
                                    bool requested = g_flushLag != 0;
                                    g_flushLag = 0;
                                    return requested;
                                });
        monitor.Start();
        std::unique_ptr<rigemu::Control> control;
        if (config.Has("control_fifo"))
        {
            control = std::make_unique<rigemu::Control>(config.Str("control_fifo"), config.Str("events_log"), *network);
        }
        // Announce once the network can carry traffic (WiFi associated, LTE attached).
        double readyTimeout = config.Num("ready_timeout_s", 10.0);
        std::function<void()> announceWhenReady;
        announceWhenReady = [&]() {
            if (network->Ready())
            {
                AnnounceReady();
            }
            else if (ns3::Simulator::Now().GetSeconds() > readyTimeout)
            {
                std::fprintf(stderr, "radio-emulator: stations not ready after %.1f s\n", readyTimeout);
                std::exit(1);
            }
            else
            {
                ns3::Simulator::Schedule(ns3::MilliSeconds(10), announceWhenReady);
            }
        };
        ns3::Simulator::Schedule(ns3::MilliSeconds(1), announceWhenReady);
        ns3::Simulator::Run();
        ns3::Simulator::Destroy();
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "radio-emulator: %s\n", e.what());
        return 1;
    }
    return 0;
}
