// Where the radios stand: the base station (AP / eNodeB) in the middle, stations on a circle
// around it, so every station has the same link to it.
#pragma once

#include "ns3/node-container.h"

namespace rigemu
{

void PlaceAround(ns3::Ptr<ns3::Node> centre, double centreHeightM, ns3::NodeContainer stations, double radiusM);

} // namespace rigemu
