// Ansible managed
// Holds SIM keys: mode 0600, never logged. Upserts the rig's subscribers into Open5GS's
// MongoDB and prints "changed=N": fields we own are $set (a no-op when equal), the rest
// ($setOnInsert) only on first insert, so the SQN the HSS advances is never reset.
const subscribers = [
  {imsi: "001010000000011", k: "465B5CE8B199B49FAA5F0A2EE238A611", opc: "E8ED289DEBA952E4283B54E88E618311", ip: "10.45.0.11"},
  {imsi: "001010000000012", k: "465B5CE8B199B49FAA5F0A2EE238A612", opc: "E8ED289DEBA952E4283B54E88E618312", ip: "10.45.0.12"},
  {imsi: "001010000000013", k: "465B5CE8B199B49FAA5F0A2EE238A613", opc: "E8ED289DEBA952E4283B54E88E618313", ip: "10.45.0.13"},
  {imsi: "001010000000014", k: "465B5CE8B199B49FAA5F0A2EE238A614", opc: "E8ED289DEBA952E4283B54E88E618314", ip: "10.45.0.14"},
  {imsi: "001010000000015", k: "465B5CE8B199B49FAA5F0A2EE238A615", opc: "E8ED289DEBA952E4283B54E88E618315", ip: "10.45.0.15"},
  {imsi: "001010000000021", k: "465B5CE8B199B49FAA5F0A2EE238A621", opc: "E8ED289DEBA952E4283B54E88E618321", ip: "10.45.0.21"},
  {imsi: "001010000000022", k: "465B5CE8B199B49FAA5F0A2EE238A622", opc: "E8ED289DEBA952E4283B54E88E618322", ip: "10.45.0.22"},
  {imsi: "001010000000023", k: "465B5CE8B199B49FAA5F0A2EE238A623", opc: "E8ED289DEBA952E4283B54E88E618323", ip: "10.45.0.23"},
  {imsi: "001010000000024", k: "465B5CE8B199B49FAA5F0A2EE238A624", opc: "E8ED289DEBA952E4283B54E88E618324", ip: "10.45.0.24"},
  {imsi: "001010000000025", k: "465B5CE8B199B49FAA5F0A2EE238A625", opc: "E8ED289DEBA952E4283B54E88E618325", ip: "10.45.0.25"},
];
const ambr = {downlink: {value: 1, unit: 3}, uplink: {value: 1, unit: 3}};  // 1 Gbps: no AMBR cap
let changed = 0;
for (const s of subscribers) {
  const r = db.subscribers.updateOne({imsi: s.imsi}, {
    $set: {
      "security.k": s.k, "security.opc": s.opc, "security.op": null, "security.amf": "8000",
      ambr: ambr,
      slice: [{sst: 1, default_indicator: true, session: [{
        name: "internet", type: 3,
        qos: {index: 9, arp: {priority_level: 8, pre_emption_capability: 1, pre_emption_vulnerability: 1}},
        ambr: ambr, ue: {ipv4: s.ip}, pcc_rule: []}]}],
    },
    $setOnInsert: {
      schema_version: 1, msisdn: [], mme_host: [], mme_realm: [], purge_flag: [],
      "security.sqn": NumberLong(97), access_restriction_data: 32, subscriber_status: 0,
      network_access_mode: 0, subscribed_rau_tau_timer: 12, __v: 0,
    },
  }, {upsert: true});
  changed += r.modifiedCount + r.upsertedCount;
}
print(`changed=${changed} subscribers=${subscribers.length}`);
