// LTE transport block sizes (3GPP TS 36.213): TBS index x PRB count (Table 7.1.7.2.1-1, one
// spatial layer, 1-110 PRBs) and the MCS -> TBS index maps of the downlink (Table 7.1.7.1-1)
// and the uplink (Table 8.6.1-1).
#pragma once

#include <cstdint>

namespace rigemu
{

constexpr int kLteMaxMcs = 28;
constexpr int kLteMaxItbs = 26;
constexpr int kLteMaxPrb = 110;

// Transport block size in bits for a TBS index (0-26) and a PRB count (1-110).
uint32_t LteTbsBits(int itbs, int nPrb);

// TBS index of a PUSCH MCS (0-28): 0-10 -> 0-10, 11-20 -> 10-19, 21-28 -> 19-26.
int LteUlItbs(int mcs);

// TBS index of a PDSCH MCS (0-28): 0-9 -> 0-9, 10-16 -> 9-15, 17-28 -> 15-26.
int LteDlItbs(int mcs);

} // namespace rigemu
