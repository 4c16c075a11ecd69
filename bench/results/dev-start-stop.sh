#!/bin/bash
# usage: dev-start-stop.sh BIN RUNS — starts `BIN dev`, waits for "ready", sends SIGINT, waits for exit.
bin=$1; runs=$2
for r in $(seq 1 $runs); do
  out=$(mktemp); err=$(mktemp)
  t0=$(date +%s.%N)
  $bin dev >$out 2>$err & pid=$!
  until grep -q '^ready$' $out; do sleep 0.02; done
  t1=$(date +%s.%N)
  kill -INT $pid; wait $pid; rc=$?
  t2=$(date +%s.%N)
  printf "run %d: ready %.2fs, stop %.2fs, exit %d, WARN %d, ERROR %d\n" $r $(echo "$t1-$t0"|bc) $(echo "$t2-$t1"|bc) $rc $(grep -c '\[WARN\]' $err) $(grep -c '\[ERROR\]' $err)
  rm -f $out $err
done
