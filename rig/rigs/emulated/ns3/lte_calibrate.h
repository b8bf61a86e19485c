// `radio-emulator --calibrate FILE.json`: one calibration scenario of the LTE models, in
// simulated time as fast as it goes (no TAPs, no real time): N UEs with constant-rate UDP
// sources through either ns-3's LENA cell ("model": "lte", set up as kind lte) or the TTI
// model ("model": "lte_tti"). Prints one JSON line: per UE throughput and delay percentiles.
// scripts/calibrate_lte.py runs the scenarios and compares.
#pragma once

#include <string>

namespace rigemu
{

int RunLteCalibration(const std::string& configPath);

} // namespace rigemu
