// What every kind of radio network (links, lte, wifi) offers to the process around it.
#pragma once

#include <cstdio>

namespace rigemu
{

class RadioNetwork
{
  public:
    virtual ~RadioNetwork() = default;

    // True once stations can carry traffic (WiFi associated, LTE attached); READY waits for it.
    virtual bool Ready() const { return true; }

    // Appends one JSON line per station with the counters of the second that just ended.
    virtual void WriteStats(std::FILE* out, double unixTime) = 0;
};

} // namespace rigemu
