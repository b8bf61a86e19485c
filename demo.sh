#!/usr/bin/env bash
# The main job on a fresh machine: install, then run the default campaign on the emulated rig,
# stream it to an embedded InfluxDB, export the dataset and write the report.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/install.sh
rig doctor
rig influx start
export RIG_INFLUX_URL=http://127.0.0.1:8086 RIG_INFLUX_DB=rig
rig campaign run campaigns/default.yaml --out results --resume
campaign_dir=$(ls -d results/default-* | sort | tail -n 1)
export_dir="exports/$(basename "$campaign_dir")"
# Exports are never overwritten: a second demo run verifies the one it made before.
[ -e "$export_dir" ] || rig export "$campaign_dir" --to "$export_dir"
rig export --verify "$export_dir"
rig report "$campaign_dir"
echo
echo "dataset: $export_dir"
echo "report:  $campaign_dir/report/index.html"
