"""A redis-py worker that holds a lock and learns of its loss from keyspace
notifications; run by compat/redispy_test.go (TestRedisPyKeyspaceLoss).

Usage:
  redispy_keyspace.py LOCK_HOST:PORT WATCH_HOST:PORT KEY

The lock is taken through one node, its events are watched on another.
Prints "ok <step>" per step; a failed check raises (exit status not 0).
The watch() function is the example of docs/redis.md.
"""

import sys
import threading
import time

import redis


def client(addr):
    host, port = addr.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=10)


def ok(step):
    print("ok", step, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# --- the example of docs/redis.md -------------------------------------------
def watch(r, lock, lost):
    """Set lost (a threading.Event) when the held redis.lock.Lock lock is
    lost: it expired, or someone deleted or overwrote it. Call it once the
    lock is acquired. Returns the listening thread; call its stop() once
    the lock is released."""
    key = lock.name
    # g: del/expire, x: expired, $: set (the key was overwritten).
    r.config_set("notify-keyspace-events", "Kgx$")
    p = r.pubsub()

    def on_event(msg):
        # An event is the cue, the lock's owner is the truth: a node
        # behind the one that granted the lock may still deliver the
        # events of the grant itself, or of the previous holder.
        if msg["data"] in (b"expired", b"del", b"set") and not lock.owned():
            lost.set()

    p.subscribe(**{"__keyspace@0__:" + key: on_event})
    # Subscribed once the confirmation is back: no change is missed after.
    deadline = time.monotonic() + 10
    while (p.get_message(timeout=1) or {}).get("type") != "subscribe":
        if time.monotonic() > deadline:
            raise TimeoutError("no subscribe confirmation")
    thread = p.run_in_thread(sleep_time=0.05, daemon=True)
    # A loss before the subscription was in place sent nothing we saw.
    if not lock.owned():
        lost.set()
    return thread
# -----------------------------------------------------------------------------


def main(lock_addr, watch_addr, key):
    rl, rw = client(lock_addr), client(watch_addr)
    print("redis-py", redis.__version__, flush=True)

    # 1. The lease runs out (no extend): the worker learns it expired.
    lock = rl.lock(key, timeout=1, thread_local=False)
    check(lock.acquire(blocking=False), "acquire")
    started = time.monotonic()
    lost = threading.Event()
    p = watch(rw, lock, lost)
    check(lost.wait(10), "no expiry notification within 10 s")
    took = time.monotonic() - started
    check(not lock.owned(), "still owned after the notification")
    check(took >= 0.9, "notified before the lease ended (%.3f s)" % took)
    print("expired after %.3f s" % took, flush=True)
    ok("expired")
    p.stop()

    # 2. Someone else deletes the key (an operator, a forced release).
    lock = rl.lock(key, timeout=30, thread_local=False)
    lost = threading.Event()
    check(lock.acquire(blocking=False), "acquire again")
    p = watch(rw, lock, lost)
    client(lock_addr).delete(key)
    check(lost.wait(10), "no del notification within 10 s")
    ok("deleted")
    p.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
