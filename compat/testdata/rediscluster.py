"""redis-py's RedisCluster and its Lock against locknode nodes in cluster mode
(serve --resp-cluster); run by compat/rediscluster_test.go.

Usage:
  rediscluster.py KEY HOST:PORT HOST:PORT HOST:PORT

Prints "master HOST:PORT" (the primary the client found), then "ok <step>"
for acquire, exclusive, extend, release and "held" (a lock is held), then
waits for a "killed" line on stdin (the test killed the leader's process)
and extends and releases the held lock, then acquires, extends and
releases a new one. Calls failing while the cluster elects a leader are
retried for up to 60 s, as an application would; a lock refused (not
owned, not acquired) is a failure. A failed check raises: exit status 1.
"""

import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import LockError, RedisError


def ok(step):
    print("ok", step, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def retry(fn, what, timeout=60):
    """fn() until it returns without a connection/cluster error."""
    deadline = time.time() + timeout
    while True:
        try:
            return fn()
        except LockError:
            raise
        except RedisError as e:
            if time.time() > deadline:
                raise
            print("retry", what, type(e).__name__, e, file=sys.stderr, flush=True)
            time.sleep(0.2)


def main(key, *addrs):
    nodes = []
    for a in addrs:
        host, port = a.rsplit(":", 1)
        nodes.append(ClusterNode(host, int(port)))
    rc = RedisCluster(startup_nodes=nodes, socket_timeout=5, socket_connect_timeout=2)
    print("redis-py", redis.__version__, file=sys.stderr, flush=True)
    primaries = rc.get_primaries()
    check(len(primaries) == 1, "one primary: %r" % primaries)
    print("master", primaries[0].name, flush=True)

    lock = rc.lock(key, timeout=10, thread_local=False)
    check(lock.acquire(blocking=False), "acquire")
    check(lock.owned(), "owned after acquire")
    ok("acquire")
    other = rc.lock(key, timeout=10, thread_local=False)
    check(not other.acquire(blocking=False), "a second lock took a held key")
    ok("exclusive")
    check(lock.extend(20, replace_ttl=True), "extend")
    check(rc.pttl(key) > 10000, "extended pttl")
    ok("extend")
    lock.release()
    check(other.acquire(blocking=False), "acquire after release")
    other.release()
    ok("release")

    held = rc.lock(key + "-held", timeout=30, thread_local=False)
    check(held.acquire(blocking=False), "acquire the lock held across the kill")
    ok("held")
    check(sys.stdin.readline().strip() == "killed", "killed line")

    check(retry(lambda: held.extend(30, replace_ttl=True), "extend"), "extend after kill")
    ok("extend after kill")
    # Lock.release forgets the token before it asks the server, so a retry
    # of release() would find no token: retry the release of the token.
    token = held.local.token
    retry(lambda: held.do_release(token), "release")
    ok("release after kill")
    fresh = rc.lock(key + "-fresh", timeout=10, thread_local=False)
    check(retry(lambda: fresh.acquire(blocking=False), "acquire"), "acquire after kill")
    rival = rc.lock(key + "-fresh", timeout=10, thread_local=False)
    check(not retry(lambda: rival.acquire(blocking=False), "rival"), "a second lock took a held key after kill")
    ok("acquire after kill")
    check(retry(lambda: fresh.extend(20, replace_ttl=True), "extend 2"), "extend after kill 2")
    ok("extend after kill 2")
    token = fresh.local.token
    retry(lambda: fresh.do_release(token), "release 2")
    ok("release after kill 2")
    rc.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
