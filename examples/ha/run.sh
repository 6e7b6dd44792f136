#!/usr/bin/env bash
# A high-availability group on one machine, all on loopback: a 3-member
# etcd cluster (client ports 24001-24003) and two nsimage servers of one
# namespace (WebHDFS on 25001 and 25002), each on its own copy of a store
# made from a generated namespace. Ctrl-C stops everything.
#
#   examples/ha/run.sh [WORKDIR]       (default: ./ha-demo)
#
# Then, in another terminal:
#   nsimage ha status --ha-etcd http://127.0.0.1:24001,http://127.0.0.1:24002,http://127.0.0.1:24003
#   curl -X PUT 'http://127.0.0.1:25001/webhdfs/v1/tmp/x?op=MKDIRS&user.name=hdfs'
#   curl -s http://127.0.0.1:25002/nsimage/ha/status
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mkdir -p "${1:-ha-demo}" && cd "${1:-ha-demo}" && pwd)"
etcd="$("$root/tests/ha/setup.sh" | tail -n 1)"
nsimage="${NSIMAGE:-$root/target/release/nsimage}"
[[ -x "$nsimage" ]] || (cd "$root" && cargo build --release --quiet)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT INT TERM

cluster=e1=http://127.0.0.1:24101,e2=http://127.0.0.1:24102,e3=http://127.0.0.1:24103
for i in 1 2 3; do
    "$etcd" --name "e$i" --data-dir "$work/etcd-e$i" \
        --listen-client-urls "http://127.0.0.1:2400$i" --advertise-client-urls "http://127.0.0.1:2400$i" \
        --listen-peer-urls "http://127.0.0.1:2410$i" --initial-advertise-peer-urls "http://127.0.0.1:2410$i" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token nsimage-demo \
        >"$work/etcd-e$i.log" 2>&1 &
    pids+=($!)
done
endpoints=http://127.0.0.1:24001,http://127.0.0.1:24002,http://127.0.0.1:24003

if [[ ! -d "$work/nn1" ]]; then
    "$nsimage" generate --inodes 100000 -o "$work/seed.nsi" >/dev/null
    "$nsimage" store init "$work/nn1" --from "$work/seed.nsi"
    cp -a "$work/nn1" "$work/nn2"   # a standby starts from a copy of the store
fi
for n in 1 2; do
    "$nsimage" serve "$work/nn$n" --writable --addr "127.0.0.1:2500$n" \
        --ha-etcd "$endpoints" --ha-id "nn$n" --checkpoint-every-ops 10000 \
        2>"$work/nn$n.log" &
    pids+=($!)
done
sleep 3
"$nsimage" ha status --ha-etcd "$endpoints"
echo "servers: http://127.0.0.1:25001 http://127.0.0.1:25002 (logs in $work); Ctrl-C stops"
wait
