// A node-redis 5 worker that holds a lock (SET NX PX through one node) and
// learns of its loss from keyspace notifications on another node; run by
// compat/nodelocks_test.go (TestNodeRedisKeyspaceLoss).
//
//   node keyspace.cjs LOCK_HOST:PORT WATCH_HOST:PORT KEY
//
// watchLock is the example of docs/redis.md. Every step prints
// "ok <step>"; a failed check throws and the exit status is 1.
"use strict";

const crypto = require("crypto");
const { createClient } = require("redis");

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function hostPort(addr) {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

// --- the example of docs/redis.md -----------------------------------------
// watchLock calls onLost once when the lock at key, held with token, is
// lost: it expired, or someone deleted or overwrote it. Call it once the
// lock is acquired; it resolves to a function that stops watching.
async function watchLock(client, key, token, onLost) {
  // g: del/expire, x: expired, $: set (the key was overwritten).
  await client.configSet("notify-keyspace-events", "Kgx$");
  const sub = client.duplicate();
  await sub.connect();
  let lost = false;
  const confirm = async () => {
    // An event is the cue, the lock's owner is the truth: a node behind
    // the one that granted the lock may still deliver the grant's own
    // events, or the previous holder's.
    if (!lost && (await client.get(key)) !== token) {
      lost = true;
      onLost();
    }
  };
  // subscribe resolves once the subscription is in place.
  await sub.subscribe(`__keyspace@0__:${key}`, (event) => {
    if (event === "expired" || event === "del" || event === "set") {
      confirm().catch((e) => console.error("watchLock:", e));
    }
  });
  await confirm(); // a loss before the subscription sent nothing we saw
  return () => sub.quit();
}
// ---------------------------------------------------------------------------

// signal is a one-shot flag: fire() sets it, within(ms) resolves true once
// it is set, false if ms pass first.
function signal() {
  let fire;
  const fired = new Promise((r) => { fire = () => r(true); });
  return {
    fire,
    within: (ms) => {
      let timer;
      const timeout = new Promise((r) => { timer = setTimeout(() => r(false), ms); });
      return Promise.race([fired, timeout]).finally(() => clearTimeout(timer));
    },
  };
}

async function main(lockAddr, watchAddr, key) {
  const locker = createClient({ socket: hostPort(lockAddr) });
  const watcher = createClient({ socket: hostPort(watchAddr) });
  for (const c of [locker, watcher]) {
    c.on("error", (e) => console.error("redis client error:", e));
    await c.connect();
  }
  try {
    // 1. The lease runs out (no extend): the worker learns it expired.
    let token = crypto.randomUUID();
    check((await locker.set(key, token, { condition: "NX", expiration: { type: "PX", value: 1000 } })) === "OK", "acquire");
    const start = Date.now();
    const expired = signal();
    let stop = await watchLock(watcher, key, token, expired.fire);
    check(await expired.within(10000), "no expiry notification within 10 s");
    const lostAt = Date.now();
    const took = lostAt - start;
    check(took >= 900, `notified before the lease ended (${took} ms)`);
    console.log(`expired after ${took} ms`);
    console.log("ok expired");
    await stop();

    // 2. Someone else deletes the key (an operator, a forced release).
    token = crypto.randomUUID();
    check((await locker.set(key, token, { condition: "NX", expiration: { type: "PX", value: 30000 } })) === "OK", "acquire again");
    const deleted = signal();
    stop = await watchLock(watcher, key, token, deleted.fire);
    await locker.del(key);
    check(await deleted.within(10000), "no del notification within 10 s");
    console.log("ok deleted");
    await stop();
  } finally {
    await locker.quit().catch(() => {});
    await watcher.quit().catch(() => {});
  }
}

main(...process.argv.slice(2, 5)).then(
  () => console.log("done"),
  (e) => {
    console.error(e);
    process.exitCode = 1;
  },
);
