// redis-semaphore (over ioredis) and simple-redis-mutex (over node-redis)
// against locknode, each with its default options; run by
// compat/nodelocks_test.go.
//
//   node locks.cjs semaphore HOST:PORT PREFIX
//       redis-semaphore 5: Mutex (SET NX PX, compare-and-pexpire and
//       compare-and-delete scripts), Semaphore and MultiSemaphore (sorted-set
//       scripts: expire old entries, count, add), refresh while held, release.
//   node locks.cjs mutex HOST:PORT PREFIX
//       simple-redis-mutex 3 over node-redis 5: tryLock, fencing tokens (INCR),
//       release by SCRIPT LOAD + EVALSHA of a script that publishes the release,
//       and lock() of a waiter woken by that message (its polling fallback is
//       10 s, far beyond the deadline checked here).
//
// Every step prints "ok <step>"; a failed check throws and the exit status is 1.
"use strict";

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function ok(step) {
  console.log("ok " + step);
}

function hostPort(addr) {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function semaphoreSuite(addr, prefix) {
  const IORedis = require("ioredis").default;
  const { Mutex, Semaphore, MultiSemaphore } = require("redis-semaphore");
  const client = new IORedis(hostPort(addr));
  try {
    // Mutex with the library's defaults (10 s lock, refreshed every 8 s).
    const m1 = new Mutex(client, `${prefix}-mutex`);
    await m1.acquire();
    check(m1.isAcquired, "mutex: acquired");
    const m2 = new Mutex(client, `${prefix}-mutex`, { acquireTimeout: 300, retryInterval: 50 });
    check(!(await m2.tryAcquire()), "mutex: a second holder got it");
    const ttl = await client.pttl(`mutex:${prefix}-mutex`);
    check(ttl > 0 && ttl <= 10000, `mutex: pttl ${ttl}`);
    ok("mutex acquire");
    await m1.release();
    check(await m2.tryAcquire(), "mutex: free after release");
    await m2.release();
    ok("mutex release");

    // A short lock is kept alive by the refresh script.
    const m3 = new Mutex(client, `${prefix}-short`, { lockTimeout: 1000 });
    await m3.acquire();
    await sleep(2500);
    check(m3.isAcquired, "mutex: lost while refreshed");
    const m4 = new Mutex(client, `${prefix}-short`, { acquireTimeout: 200, retryInterval: 50 });
    check(!(await m4.tryAcquire()), "mutex: taken over while refreshed");
    await m3.release();
    ok("mutex refresh");

    // Semaphore of 2: two holders, the third waits for a release.
    const sem = (opts) => new Semaphore(client, `${prefix}-sem`, 2, opts);
    const s1 = sem(), s2 = sem(), s3 = sem({ acquireTimeout: 300, retryInterval: 50 });
    await s1.acquire();
    await s2.acquire();
    check(!(await s3.tryAcquire()), "semaphore: a third holder of 2");
    ok("semaphore limit");
    await s1.release();
    check(await s3.tryAcquire(), "semaphore: a slot after release");
    await s2.release();
    await s3.release();
    ok("semaphore release");

    // MultiSemaphore: permits taken several at a time (zadd of unpack(args)).
    const ms = (permits, opts) => new MultiSemaphore(client, `${prefix}-multi`, 3, permits, opts);
    const a = ms(2), b = ms(2, { acquireTimeout: 300, retryInterval: 50 }), c = ms(1, { acquireTimeout: 300, retryInterval: 50 });
    await a.acquire();
    check(!(await b.tryAcquire()), "multi: 2 + 2 permits of 3");
    check(await c.tryAcquire(), "multi: 2 + 1 permits of 3");
    await a.release();
    check(await b.tryAcquire(), "multi: 1 + 2 permits of 3 after release");
    await b.release();
    await c.release();
    ok("multisemaphore");
  } finally {
    client.disconnect();
  }
}

async function mutexSuite(addr, prefix) {
  const { createClient } = require("redis");
  const { lock, tryLock } = require("simple-redis-mutex");
  const { host, port } = hostPort(addr);
  const client = createClient({ socket: { host, port } });
  client.on("error", (e) => console.error("redis client error:", e));
  await client.connect();
  try {
    const [held, release] = await tryLock(client, `${prefix}-m`);
    check(held, "tryLock: not acquired");
    const [held2] = await tryLock(client, `${prefix}-m`);
    check(!held2, "tryLock: a second holder got it");
    ok("trylock");

    const [held3, release3] = await tryLock(client, `${prefix}-other`);
    check(held3 && release3.fencingToken > release.fencingToken,
      `fencing tokens ${release.fencingToken} then ${release3.fencingToken}`);
    await release3();
    ok("fencing");

    // A waiter blocks in lock(); the release publishes, the waiter retries.
    const start = Date.now();
    const waiter = lock(client, `${prefix}-m`, { failAfter: 8000 });
    await sleep(300);
    await release();
    const release2 = await waiter;
    const waited = Date.now() - start;
    check(waited < 5000, `waiter woke after ${waited} ms (the release message did not arrive)`);
    ok("wake on release");
    await release2();
    await release2(); // idempotent
    const [again, releaseAgain] = await tryLock(client, `${prefix}-m`);
    check(again, "free after the waiter's release");
    await releaseAgain();
    ok("release");
  } finally {
    await client.quit().catch(() => {});
    // simple-redis-mutex keeps a subscriber connection; end the process.
    setTimeout(() => process.exit(process.exitCode || 0), 100).unref();
  }
}

const [mode, addr, prefix] = process.argv.slice(2);
const suites = { semaphore: semaphoreSuite, mutex: mutexSuite };
if (!suites[mode]) {
  console.error("usage: node locks.cjs semaphore|mutex HOST:PORT PREFIX");
  process.exit(2);
}
suites[mode](addr, prefix).then(
  () => {
    console.log("done");
    process.exit(0);
  },
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
