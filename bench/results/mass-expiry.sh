#!/bin/bash
# Times writes across a mass expiry: starts `locknode dev` with the given
# binary, writes <keys> SET NX PXAT keys that all expire at the same
# millisecond (so one Tick entry expires them all), then times one SET
# every 100 ms from before the expiry until 40 s after it.
#
#   bench/results/mass-expiry.sh ./locknode 60000
#
# Needs redis-cli and python3.
set -u
bin=$1; n=${2:-60000}
out=$(mktemp -d)
"$bin" dev > "$out/dev.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 1 100); do grep -q ready "$out/dev.log" && break; sleep 0.2; done
port=$(grep -o 'resp=[0-9.:]*' "$out/dev.log" | head -1 | sed 's/.*://')
at=$(( $(date +%s%3N) + 45000 ))
python3 -c "
import sys
for i in range($n):
    a = ['SET', 'mass/%d' % i, 'v', 'NX', 'PXAT', '$at']
    sys.stdout.write('*%d\r\n' % len(a) + ''.join('\$%d\r\n%s\r\n' % (len(x), x) for x in a))
" | redis-cli -p "$port" --pipe | tail -1
echo "filled; all expire at $at, now $(date +%s%3N)"
worst=0
end=$(( at + 40000 ))
while [ "$(date +%s%3N)" -lt $end ]; do
  t0=$(date +%s%3N)
  timeout 60 redis-cli -p "$port" SET probe x > /dev/null
  d=$(( $(date +%s%3N) - t0 ))
  if [ $d -gt $worst ]; then worst=$d; echo "SET took $d ms ($(( t0 - at )) ms from the expiry)"; fi
  sleep 0.1
done
echo "worst SET: $worst ms"
