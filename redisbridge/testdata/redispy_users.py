# redis-py with a user name and password: Lock (SCRIPT LOAD, EVALSHA) as
# a user without admin, NOPERM outside its namespace, WRONGPASS.
import sys
import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, username="rw", password="rwp")
who = r.acl_whoami()
assert who in (b"rw", "rw"), who
lock = r.lock("app:py", timeout=5, blocking=False)
assert lock.acquire()
assert lock.extend(5)
lock.release()
try:
    r.get("other")
    raise SystemExit("GET outside the namespace worked")
except redis.exceptions.NoPermissionError as e:
    assert str(e) == "this user has no permissions to access one of the keys used as arguments", str(e)
bad = redis.Redis(host=host, port=port, username="rw", password="nope")
try:
    bad.ping()
    raise SystemExit("a wrong password worked")
except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as e:
    # redis-py raises what real Redis' reply makes it raise; the text is Redis'.
    assert "invalid username-password pair or user is disabled" in str(e), str(e)
print("ok")
