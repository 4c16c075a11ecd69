# Drives redis-py's Lock, Sentinel discovery, pipelines and pub/sub
# against the bridge. Usage: redispy_lock.py host port
import sys
import redis
from redis.sentinel import Sentinel

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, socket_timeout=5)
assert r.ping()

lock = r.lock("py-lock", timeout=10, blocking_timeout=1)
assert lock.acquire(), "acquire"
other = r.lock("py-lock", timeout=10, blocking_timeout=0.2)
assert not other.acquire(), "second acquire must fail"
assert lock.owned(), "owned"
assert lock.extend(5), "extend"
ttl = r.pttl("py-lock")
assert 10000 < ttl <= 15000, ttl
assert lock.reacquire(), "reacquire"
lock.release()
assert not r.exists("py-lock")
try:
    lock.release()
    raise SystemExit("release of a released lock must raise")
except redis.exceptions.LockError:
    pass
assert other.acquire(), "acquire after release"
other.release()

with r.pipeline() as p:  # MULTI/EXEC
    p.set("a", "1").incr("a").get("a")
    assert p.execute() == [True, 2, b"2"]

s = Sentinel([(host, port)], socket_timeout=5)
m = s.master_for("locknode", socket_timeout=5)
assert m.set("via-sentinel", "x")
assert m.get("via-sentinel") == b"x"
assert s.discover_master("locknode") == (host, port)

ps = r.pubsub()
ps.subscribe("py-chan")
assert ps.get_message(timeout=5)["type"] == "subscribe"
assert r.publish("py-chan", "hello") == 1
msg = ps.get_message(timeout=5)
assert msg and msg["data"] == b"hello", msg
ps.close()
print("ok")
