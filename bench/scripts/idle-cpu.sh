#!/bin/sh
# idle-cpu.sh BIN [BIN...]: starts 3 idle `locknode serve` processes of
# each binary in turn (fresh data dirs, loopback; a BIN named etcd starts
# a 3-member etcd cluster instead), lets them settle, and
# prints the cores they used together over WINDOW seconds (default 10),
# from /proc/<pid>/stat utime+stime. Repeats ROUNDS times (default 3),
# alternating the binaries, so they are compared under the same load.
set -eu
WINDOW=${WINDOW:-10}
ROUNDS=${ROUNDS:-3}
SETTLE=${SETTLE:-5}
HZ=$(getconf CLK_TCK)

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ticks() { awk '{print $14+$15}' /proc/$1/stat; }

measure() {
	bin=$1
	dir=$(mktemp -d)
	peers=""
	for i in 1 2 3; do
		eval "r$i=$(port)"
		eval "peers=\"\${peers:+\$peers,}n$i=127.0.0.1:\$r$i\""
	done
	pids=""
	if [ "$(basename "$bin")" = etcd ]; then
		cl=""
		for i in 1 2 3; do
			eval "c$i=$(port)"
			eval "cl=\"\${cl:+\$cl,}e$i=http://127.0.0.1:\$r$i\""
		done
		for i in 1 2 3; do
			eval "ra=\$r$i; ca=\$c$i"
			"$bin" --name e$i --data-dir "$dir/e$i" \
				--listen-peer-urls http://127.0.0.1:$ra --initial-advertise-peer-urls http://127.0.0.1:$ra \
				--listen-client-urls http://127.0.0.1:$ca --advertise-client-urls http://127.0.0.1:$ca \
				--initial-cluster "$cl" --initial-cluster-state new --log-level error >"$dir/e$i.log" 2>&1 &
			pids="$pids $!"
		done
	fi
	for i in 1 2 3; do
		[ "$(basename "$bin")" = etcd ] && break
		eval "ra=\$r$i"
		"$bin" serve --id n$i --data "$dir/n$i" --raft-addr 127.0.0.1:$ra \
			--http-addr 127.0.0.1:$(port) --resp-addr 127.0.0.1:$(port) \
			--bootstrap --peers "$peers" --log-level error >"$dir/n$i.log" 2>&1 &
		pids="$pids $!"
	done
	sleep "$SETTLE"
	t0=0
	for p in $pids; do t0=$((t0 + $(ticks $p))); done
	sleep "$WINDOW"
	t1=0
	for p in $pids; do t1=$((t1 + $(ticks $p))); done
	for p in $pids; do kill $p; done
	for p in $pids; do wait $p 2>/dev/null || true; done
	rm -rf "$dir"
	python3 -c "print('%s cores=%.4f' % ('$bin', ($t1-$t0)/$HZ/$WINDOW))"
}

r=1
while [ $r -le "$ROUNDS" ]; do
	for b in "$@"; do measure "$b"; done
	r=$((r + 1))
done
