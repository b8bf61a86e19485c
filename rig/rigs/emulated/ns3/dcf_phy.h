// The 802.11 PHY/MAC timing of one BSS for the `dcf` medium model (dcf_medium.h): slot, SIFS,
// AIFS, contention window, PPDU durations at the profile's fixed data rate, control frames,
// A-MPDU limits. The rates are those the `wifi` kind (ns-3) uses for the same profile.
#pragma once

#include <cstdint>
#include <string>

namespace rigemu
{

struct DcfPhy
{
    std::string dataMode;       // e.g. "HtMcs7", as the `wifi` kind reports it
    double dataRateBps = 0;     // the PHY rate of data PPDUs
    int dataBitsPerSymbol = 0;  // OFDM data bits per 4 us symbol at that rate
    double preambleUs = 0;      // preamble + PLCP header(s) of a data PPDU
    double signalExtensionUs = 0; // 6 us after every OFDM PPDU at 2.4 GHz (ERP / HT)
    double slotUs = 9;
    double sifsUs = 16;
    int aifsn = 2;              // DIFS = SIFS + 2 slots (non-QoS a/g); AC_BE: 3 (QoS n/ac)
    int cwMin = 15;
    int cwMax = 1023;
    int retryLimit = 7;         // attempts after the first before a frame is dropped
    bool qos = false;           // QoS data header (26 bytes instead of 24)
    bool aggregation = false;   // A-MPDU with block ACK (n, ac)
    uint32_t maxAmpduBytes = 0;
    double maxPpduUs = 5484;    // aPPDUMaxTime of HT-mixed / VHT PPDUs
    int blockAckWindow = 64;    // MPDUs in one A-MPDU at most
    uint32_t rtsThresholdBytes = 4692480; // PSDUs larger are protected by RTS/CTS (ns-3's default: never)
    int controlBitsPerSymbol = 96; // ACK / BA / RTS / CTS at 24 Mbit/s (non-HT)

    double AifsUs() const { return sifsUs + aifsn * slotUs; }

    // MPDU bytes of a data frame carrying `payload` bytes (the Ethernet payload): MAC header,
    // LLC/SNAP, FCS.
    uint32_t MpduBytes(uint32_t payload) const { return payload + (qos ? 26 : 24) + 8 + 4; }

    // Air time of a data PPDU with a PSDU of `psduBytes` at the data rate.
    double DataPpduUs(uint32_t psduBytes) const;
    // Air time of a non-HT PPDU (20 us preamble + SIGNAL) at `bitsPerSymbol`.
    double LegacyPpduUs(uint32_t bytes, int bitsPerSymbol) const;

    double AckUs() const { return LegacyPpduUs(14, controlBitsPerSymbol); }
    double BlockAckUs() const { return LegacyPpduUs(32, controlBitsPerSymbol); } // compressed BA
    double BlockAckRequestUs() const { return LegacyPpduUs(24, controlBitsPerSymbol); }
    double RtsUs() const { return LegacyPpduUs(20, controlBitsPerSymbol); }
    double CtsUs() const { return LegacyPpduUs(14, controlBitsPerSymbol); }
    // Group-addressed frames: the lowest OFDM rate, no ACK.
    double GroupPpduUs(uint32_t payload) const { return LegacyPpduUs(MpduBytes(payload), 24); }
    // What a transmitter waits for a missing ACK / CTS before it contends again.
    double AckTimeoutUs() const { return sifsUs + slotUs + 20; }
};

// The profile's standard / band / width (radio-configs/wifi/*.yaml); throws std::runtime_error
// for a combination the `wifi` kind does not support either.
DcfPhy DcfPhyFor(const std::string& standard, double bandGhz, int widthMhz);

} // namespace rigemu
