// Runtime control of a running emulator: changes to station pipes at given wall-clock instants
// (rig/rigs/emulated/control.py writes them, one JSON object a line, into a FIFO in the workdir).
//
// A command: {"id", "at": unix time, "tap", "direction": "up"|"down"|"both", optional
// "rate_bps", "delay_s", "jitter_s", "loss", "queue_packets", "state": "up"|"down", "trace":
// path}. On receipt the emulator checks it, loads its trace and logs {"id", "status":
// "scheduled"} (or "error" with the reason); at `at` it applies the change and logs {"id",
// "status": "applied", "planned", "actual", "late_ms", and the change}. Nothing runs per frame
// for this: the FIFO is one more fd in the simulator's epoll set, a change is one event.
#pragma once

#include "json.h"
#include "network.h"
#include "pipe.h"

#include <cstdio>
#include <string>

namespace rigemu
{

class Control
{
  public:
    Control(const std::string& fifoPath, const std::string& logPath, RadioNetwork& network);
    ~Control();

  private:
    struct Command
    {
        std::string id;
        double at = 0;
        std::string tap;
        std::string direction;
        PipeUpdate update;
        std::string tracePath;
    };

    void OnReadable();
    void Handle(const std::string& line);
    void Apply(const Command& command);
    void Log(const std::string& json);

    std::string m_fifoPath;
    int m_fd = -1;
    std::FILE* m_log = nullptr;
    RadioNetwork& m_network;
    std::string m_pending; // a line not complete yet
};

} // namespace rigemu
