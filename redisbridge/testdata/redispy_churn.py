# redis-py's Lock around script-cache churn: 600 distinct EVALs (more
# than the EVAL-cached bound) while the lock is held, then a SCRIPT FLUSH
# (the Lock's Script objects then reload on NOSCRIPT).
# Usage: redispy_churn.py host port
import sys
import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, socket_timeout=10)


def churn(base, n=600):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.eval("return %d" % (base + i), 0)
    assert p.execute() == list(range(base, base + n)), "churn"


for round, flush in enumerate([False, True]):
    if flush:
        assert r.script_flush()
    lock = r.lock("py-churn", timeout=30, blocking_timeout=5)
    assert lock.acquire(), "acquire"
    churn(100000 * (round + 1))
    assert lock.extend(5), "extend"
    assert lock.reacquire(), "reacquire"
    lock.release()
    assert not r.exists("py-churn"), "released"
print("ok")
