"""redis-py's redis.lock.Lock against locknode nodes; run by compat/redispy_test.go.

Usage:
  redispy_lock.py suite HOST:PORT HOST:PORT KEY   the Lock API, clients on two nodes
  redispy_lock.py hold  HOST:PORT KEY             acquire, print "held", release on a
                                                  "release" line from stdin
  redispy_lock.py wait  HOST:PORT KEY             fail a non-blocking acquire (print
                                                  "contended"), then block until acquired

Every step prints "ok <step>"; a failed check raises, so the exit status is not 0.
"""

import sys
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError


def client(addr):
    host, port = addr.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=10)


def ok(step):
    print("ok", step, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(exc, fn, what):
    try:
        fn()
    except exc:
        return
    raise AssertionError(what + ": no " + exc.__name__)


def suite(a1, a2, key):
    r1, r2 = client(a1), client(a2)
    print("redis-py", redis.__version__, flush=True)
    check(r1.ping() and r2.ping(), "ping")

    lock = r1.lock(key, timeout=5, thread_local=False)
    check(lock.acquire(blocking=False), "acquire")
    check(lock.owned(), "owned after acquire")
    check(lock.locked(), "locked after acquire")
    check(r2.get(key) == lock.local.token, "token visible on the other node")
    ok("acquire")

    other = r2.lock(key, timeout=5)
    check(not other.acquire(blocking=False), "a second lock took a held key")
    check(not other.acquire(blocking_timeout=0.3), "a blocking second lock took a held key")
    check(not other.owned(), "a refused lock claims ownership")
    ok("exclusive")

    # extend adds to the remaining TTL (EVALSHA, NOSCRIPT -> SCRIPT LOAD -> EVALSHA).
    check(lock.extend(5), "extend")
    ttl = r2.pttl(key)
    check(5000 < ttl <= 10000, "pttl after extend(5) = %d" % ttl)
    ok("extend")

    check(lock.extend(2, replace_ttl=True), "extend replace_ttl")
    ttl = r2.pttl(key)
    check(0 < ttl <= 2000, "pttl after extend(2, replace_ttl) = %d" % ttl)
    ok("extend_replace")

    check(lock.reacquire(), "reacquire")
    ttl = r1.pttl(key)
    check(2000 < ttl <= 5000, "pttl after reacquire = %d" % ttl)
    ok("reacquire")

    # A lock object with the wrong token can neither extend nor release.
    stranger = r2.lock(key, timeout=5, thread_local=False)
    stranger.local.token = b"not-the-owner"
    raises(LockNotOwnedError, lambda: stranger.extend(1), "stranger extend")
    raises(LockNotOwnedError, lambda: stranger.reacquire(), "stranger reacquire")
    raises(LockNotOwnedError, lambda: stranger.release(), "stranger release")
    check(lock.owned(), "the owner lost the lock to a stranger")
    ok("not_owner")

    lock.release()
    check(not lock.owned(), "owned after release")
    check(not lock.locked(), "locked after release")
    check(r2.get(key) is None, "key present after release")
    raises(LockError, lambda: lock.release(), "release twice")
    ok("release")

    # Released: the other node's lock gets it now.
    check(other.acquire(blocking=False), "acquire after release")
    other.release()
    ok("reacquire_after_release")

    # A lease ends by itself; the old owner can then neither extend nor release.
    short = r1.lock(key, timeout=0.3, thread_local=False)
    check(short.acquire(blocking=False), "acquire short")
    deadline = time.monotonic() + 5
    while short.locked():
        check(time.monotonic() < deadline, "0.3s lease still held after 5s")
        time.sleep(0.02)
    raises(LockNotOwnedError, lambda: short.extend(1), "extend after expiry")
    short.local.token = b"x"  # release() needs a token to send
    raises(LockNotOwnedError, lambda: short.release(), "release after expiry")
    ok("expiry")

    with r2.lock(key, timeout=5, blocking_timeout=5) as held:
        check(held.owned(), "context manager owns the lock")
    check(r1.get(key) is None, "context manager left the key")
    ok("context_manager")


def hold(addr, key):
    r = client(addr)
    lock = r.lock(key, timeout=20, thread_local=False)
    check(lock.acquire(blocking=False), "hold: acquire")
    print("held", flush=True)
    line = sys.stdin.readline().strip()
    check(line == "release", "hold: unexpected stdin %r" % line)
    check(lock.owned(), "hold: lost the lock while holding it")
    lock.release()
    print("released", flush=True)


def wait(addr, key):
    r = client(addr)
    lock = r.lock(key, timeout=20, sleep=0.02, thread_local=False)
    check(not lock.acquire(blocking=False), "wait: got a held lock")
    print("contended", flush=True)
    check(lock.acquire(blocking_timeout=20), "wait: not handed the lock within 20s")
    print("acquired", flush=True)
    check(lock.owned(), "wait: acquired but not owned")
    lock.release()
    print("done", flush=True)


def main():
    mode = sys.argv[1]
    if mode == "suite":
        suite(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "hold":
        hold(sys.argv[2], sys.argv[3])
    elif mode == "wait":
        wait(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
