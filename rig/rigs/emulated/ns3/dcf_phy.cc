#include "dcf_phy.h"

#include <cmath>
#include <stdexcept>

namespace rigemu
{

namespace
{

constexpr double kSymbolUs = 4.0;   // OFDM symbol, 800 ns guard interval (ns-3's default)
constexpr int kServiceAndTailBits = 16 + 6;

double
Symbols(uint32_t bytes, int bitsPerSymbol)
{
    return std::ceil((kServiceAndTailBits + 8.0 * bytes) / bitsPerSymbol);
}

} // namespace

double
DcfPhy::DataPpduUs(uint32_t psduBytes) const
{
    return preambleUs + kSymbolUs * Symbols(psduBytes, dataBitsPerSymbol) + signalExtensionUs;
}

double
DcfPhy::LegacyPpduUs(uint32_t bytes, int bitsPerSymbol) const
{
    return 20.0 + kSymbolUs * Symbols(bytes, bitsPerSymbol) + signalExtensionUs;
}

DcfPhy
DcfPhyFor(const std::string& standard, double bandGhz, int width)
{
    bool band24 = bandGhz < 3;
    DcfPhy p;
    p.sifsUs = band24 ? 10 : 16;
    p.signalExtensionUs = band24 ? 6 : 0;
    if ((standard == "g" && band24 && width == 20) || (standard == "a" && !band24 && width == 20))
    {
        // ERP-OFDM / OFDM 54 Mbit/s, non-QoS DCF (DIFS = SIFS + 2 slots), 9 us slots.
        p.dataMode = standard == "g" ? "ErpOfdmRate54Mbps" : "OfdmRate54Mbps";
        p.dataRateBps = 54e6;
        p.dataBitsPerSymbol = 216;
        p.preambleUs = 20;
        return p;
    }
    if (standard == "n" && (width == 20 || width == 40))
    {
        // HT MCS 7, one stream: HT-mixed preamble L-STF+L-LTF+L-SIG+HT-SIG+HT-STF+HT-LTF.
        p.dataMode = "HtMcs7";
        p.dataRateBps = width == 20 ? 65e6 : 135e6;
        p.dataBitsPerSymbol = width == 20 ? 260 : 540;
        p.preambleUs = 36;
        p.qos = true;
        p.aifsn = 3;
        p.aggregation = true;
        p.maxAmpduBytes = 65535;
        return p;
    }
    if (standard == "ac" && !band24 && (width == 20 || width == 40 || width == 80))
    {
        // VHT MCS 9 (MCS 8 at 20 MHz, where 9 is not valid), one stream:
        // L-STF+L-LTF+L-SIG+VHT-SIG-A+VHT-STF+VHT-LTF+VHT-SIG-B.
        p.dataMode = width == 20 ? "VhtMcs8" : "VhtMcs9";
        p.dataRateBps = width == 20 ? 78e6 : width == 40 ? 180e6 : 390e6;
        p.dataBitsPerSymbol = width == 20 ? 312 : width == 40 ? 720 : 1560;
        p.preambleUs = 40;
        p.qos = true;
        p.aifsn = 3;
        p.aggregation = true;
        p.maxAmpduBytes = 65535; // ns-3's BE_MaxAmpduSize, the same for HT and VHT
        return p;
    }
    throw std::runtime_error("dcf: unsupported standard/band/width " + standard + "/" + std::to_string(bandGhz) +
                             " GHz/" + std::to_string(width) + " MHz");
}

} // namespace rigemu
