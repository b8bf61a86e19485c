// `radio-emulator --calibrate-wifi SCENARIO.json`: one BSS with synthetic traffic, run as fast as it
// goes (ns-3's default simulator, no TAPs), either in ns-3's WiFi model (built as kind "wifi"
// builds it) or in the `dcf` medium model. Prints one JSON object: throughput, per-packet
// delays, collisions, CPU time. Driven by scripts/calibrate_wifi.py.
#pragma once

#include <string>

namespace rigemu
{

// Returns the process exit status (0, or 1 with a message on stderr).
int RunCalibration(const std::string& scenarioPath);

} // namespace rigemu
