# redis-py's Lock around script-cache churn: 600 distinct EVALs (more
# than the EVAL-cached bound) while the lock is held, then a SCRIPT FLUSH
# (the Lock's Script objects then reload on NOSCRIPT).
# Usage: redispy_churn.py host port
import sys
import time

import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, socket_timeout=10)


def churn(base, n=600):
    # TRYAGAIN is the answer of a node that has had no leader for longer
    # than an election takes (a machine starved of CPU can get there);
    # Redis clients retry it, and so does this one, a few times.
    for attempt in range(5):
        p = r.pipeline(transaction=False)
        for i in range(n):
            p.eval("return %d" % (base + i), 0)
        try:
            assert p.execute() == list(range(base, base + n)), "churn"
            return
        except redis.exceptions.ResponseError as e:
            if "TRYAGAIN" not in str(e) or attempt == 4:
                raise
            time.sleep(0.5)


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
