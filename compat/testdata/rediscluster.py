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

redis-py before 4.4 (Debian bookworm has 4.3.4) cannot re-initialise a
RedisCluster once a node has failed: it deep-copies connection arguments
that hold a bound method of the client and raises "cannot pickle
'_thread.lock' object" (redis/redis-py#2480, fixed in 4.4.0 by #2377), with
any cluster. The retry below replaces the client when that happens, as an
application on that version has to.
"""

import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import LockError, RedisClusterException, RedisError


def ok(step):
    print("ok", step, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Client:
    """The application's RedisCluster, replaced when redis-py cannot
    re-initialise it (see the module doc)."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.rc = self.new()

    def new(self):
        return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in self.nodes],
                            socket_timeout=5, socket_connect_timeout=2)

    def retry(self, fn, what, timeout=60):
        """fn(rc) until it returns without a connection or cluster error."""
        deadline = time.time() + timeout
        while True:
            try:
                return fn(self.rc)
            except LockError:
                raise
            except (RedisError, RedisClusterException) as e:
                if time.time() > deadline:
                    raise
                print("retry", what, type(e).__name__, e, file=sys.stderr, flush=True)
                if isinstance(e, RedisClusterException):
                    try:
                        self.rc = self.new()
                    except (RedisError, RedisClusterException) as e2:
                        print("new client:", e2, file=sys.stderr, flush=True)
                time.sleep(0.2)


def bound(rc, name, token, timeout):
    """A Lock of rc holding token (a lock taken through an earlier client)."""
    lock = rc.lock(name, timeout=timeout, thread_local=False)
    lock.local.token = token
    return lock


def main(key, *addrs):
    nodes = []
    for a in addrs:
        host, port = a.rsplit(":", 1)
        nodes.append((host, int(port)))
    client = Client(nodes)
    rc = client.rc
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

    held_name = key + "-held"
    held = rc.lock(held_name, timeout=30, thread_local=False)
    check(held.acquire(blocking=False), "acquire the lock held across the kill")
    token = held.local.token
    ok("held")
    check(sys.stdin.readline().strip() == "killed", "killed line")

    check(client.retry(lambda rc: bound(rc, held_name, token, 30).extend(30, replace_ttl=True), "extend"),
          "extend after kill")
    ok("extend after kill")
    client.retry(lambda rc: bound(rc, held_name, token, 30).do_release(token), "release")
    ok("release after kill")

    fresh_name = key + "-fresh"
    fresh_token = []

    def acquire(rc):
        lock = rc.lock(fresh_name, timeout=10, thread_local=False)
        got = lock.acquire(blocking=False)
        if got:
            fresh_token.append(lock.local.token)
        return got

    check(client.retry(acquire, "acquire"), "acquire after kill")
    check(not client.retry(lambda rc: rc.lock(fresh_name, timeout=10).acquire(blocking=False), "rival"),
          "a second lock took a held key after kill")
    ok("acquire after kill")
    ft = fresh_token[0]
    check(client.retry(lambda rc: bound(rc, fresh_name, ft, 10).extend(20, replace_ttl=True), "extend 2"),
          "extend after kill 2")
    ok("extend after kill 2")
    client.retry(lambda rc: bound(rc, fresh_name, ft, 10).do_release(ft), "release 2")
    ok("release after kill 2")
    client.rc.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
