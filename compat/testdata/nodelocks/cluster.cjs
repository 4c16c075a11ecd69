// ioredis' Cluster with redis-semaphore's Mutex against locknode nodes in
// cluster mode (serve --resp-cluster); run by compat/rediscluster_test.go.
//
//   node cluster.cjs KEY HOST:PORT HOST:PORT HOST:PORT
//
// Prints "master HOST:PORT" (the master ioredis found), then "ok <step>"
// for acquire, exclusive, refresh (a 1 s lock kept by the library's
// refresh), release and "held" (a lock is held), then waits for a
// "killed" line on stdin (the test killed the leader's process) and
// extends (the library's refresh of an externally acquired lock) and
// releases the held lock, then acquires, keeps refreshed (a 2 s lock held
// 4 s) and releases a new one. Calls failing while the cluster elects a leader are retried for
// up to 60 s, as an application would; a refused lock is a failure.
"use strict";

const readline = require("readline");
const { Cluster } = require("ioredis");
const { Mutex } = require("redis-semaphore");

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function ok(step) {
  console.log("ok " + step);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hostPort(addr) {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

// retry runs fn until it resolves; a refusal (fn's own check) is not
// retried, only errors of the connection or the cluster.
async function retry(what, fn, timeout = 60000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (e.message.startsWith("check failed") || Date.now() > deadline) throw e;
      console.error(`retry ${what}: ${e.message}`);
      await sleep(200);
    }
  }
}

async function main(key, addrs) {
  const lines = readline.createInterface({ input: process.stdin });
  const nextLine = () => new Promise((r) => lines.once("line", r));
  const cluster = new Cluster(addrs.map(hostPort), {
    redisOptions: { connectTimeout: 2000, commandTimeout: 5000 },
    slotsRefreshTimeout: 2000,
  });
  cluster.on("error", (e) => console.error("cluster error:", e.message));
  try {
    await cluster.ping();
    const masters = cluster.nodes("master").map((n) => `${n.options.host}:${n.options.port}`);
    check(masters.length === 1, `one master: ${masters}`);
    console.log("master " + masters[0]);

    const m1 = new Mutex(cluster, key, { lockTimeout: 10000, refreshInterval: 0 });
    await m1.acquire();
    check(m1.isAcquired, "acquired");
    ok("acquire");
    const m2 = new Mutex(cluster, key, { acquireTimeout: 300, retryInterval: 50 });
    check(!(await m2.tryAcquire()), "a second holder got it");
    ok("exclusive");
    const short = new Mutex(cluster, key + "-short", { lockTimeout: 1000 });
    await short.acquire();
    await sleep(2500);
    check(short.isAcquired, "lost while refreshed");
    check(!(await new Mutex(cluster, key + "-short", { acquireTimeout: 200, retryInterval: 50 }).tryAcquire()),
      "taken over while refreshed");
    await short.release();
    ok("refresh");
    await m1.release();
    check(await m2.tryAcquire(), "free after release");
    await m2.release();
    ok("release");

    const held = new Mutex(cluster, key + "-held", { lockTimeout: 30000, refreshInterval: 0 });
    await held.acquire();
    ok("held");
    check((await nextLine()) === "killed", "killed line");

    // The library's refresh of a lock it did not take: its extend.
    const extend = new Mutex(cluster, key + "-held", {
      lockTimeout: 30000, refreshInterval: 0, identifier: held.identifier, acquiredExternally: true,
    });
    check(await retry("extend", () => extend.tryAcquire()), "extend after kill");
    ok("extend after kill");
    await retry("release", () => held.release());
    ok("release after kill");

    const fresh = new Mutex(cluster, key + "-fresh", { lockTimeout: 2000 });
    check(await retry("acquire", () => fresh.tryAcquire()), "acquire after kill");
    const rival = new Mutex(cluster, key + "-fresh", { acquireTimeout: 200, retryInterval: 50 });
    check(!(await retry("rival", () => rival.tryAcquire())), "a second holder after kill");
    ok("acquire after kill");
    await sleep(4000);
    check(fresh.isAcquired, "lost while refreshed after kill");
    ok("refresh after kill");
    await retry("release 2", () => fresh.release());
    ok("release after kill 2");
  } finally {
    lines.close();
    cluster.disconnect();
  }
}

main(process.argv[2], process.argv.slice(3)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
