#include "layout.h"

#include "ns3/mobility-helper.h"
#include "ns3/mobility-model.h"

#include <cmath>

namespace rigemu
{

void
PlaceAround(ns3::Ptr<ns3::Node> centre, double centreHeightM, ns3::NodeContainer stations, double radiusM)
{
    ns3::MobilityHelper mobility;
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(centre);
    mobility.Install(stations);
    centre->GetObject<ns3::MobilityModel>()->SetPosition(ns3::Vector(0, 0, centreHeightM));
    for (size_t i = 0; i < stations.GetN(); ++i)
    {
        double angle = 2 * M_PI * i / stations.GetN();
        stations.Get(i)->GetObject<ns3::MobilityModel>()->SetPosition(
            ns3::Vector(radiusM * std::cos(angle), radiusM * std::sin(angle), 1.5));
    }
}

} // namespace rigemu
