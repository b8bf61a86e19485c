// What every kind of radio network (links, lte, wifi) offers to the process around it.
#pragma once

#include <cstdio>
#include <string>

namespace rigemu
{

class Pipe;

class RadioNetwork
{
  public:
    virtual ~RadioNetwork() = default;

    // True once stations can carry traffic (WiFi associated, LTE attached); READY waits for it.
    virtual bool Ready() const { return true; }

    // Appends one JSON line per station with the counters of the second that just ended.
    virtual void WriteStats(std::FILE* out, double unixTime) = 0;

    // Runtime control (control.h): whether a station TAP belongs to this network, and the pipe
    // of one direction of it (kinds lte/wifi: the impairment pipe on top of the radio, made on
    // first use). Null for an unknown TAP.
    virtual bool HasStation(const std::string& tap) const = 0;
    virtual Pipe* StationPipe(const std::string& tap, bool up) = 0;
};

} // namespace rigemu
