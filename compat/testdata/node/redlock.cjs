// node-redlock v5 and ioredis against locknode; run by compat/node_test.go.
//
//   node redlock.cjs suite HOST:PORT PREFIX
//       redlock over one endpoint with ioredis 5 (RESP2) and ioredis 6 (RESP3):
//       acquire, exclusion, extend, release, using() under contention.
//   node redlock.cjs sentinel HOST:PORT,HOST:PORT,... PREFIX
//       ioredis 6 in Sentinel mode over the nodes; prints "connected PORT",
//       waits for a "killed" line on stdin, then retries redlock until it works
//       through another node and prints "reconnected PORT".
//
// Every step prints "ok <step>"; a failed check throws and the exit status is 1.
"use strict";

const Redlock = require("redlock").default;
const { ExecutionError } = require("redlock");
const IORedis6 = require("ioredis").default;
const IORedis5 = require("ioredis5").default;
const readline = require("node:readline");

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function ok(step) {
  console.log("ok " + step);
}

async function rejects(promise, cls, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof cls, what + ": got " + e);
    return;
  }
  throw new Error(what + ": did not fail");
}

function hostPort(addr) {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

// helloProto finds "proto" in a HELLO reply (flat array or object).
function helloProto(reply) {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (String(reply[i]) === "proto") return Number(reply[i + 1]);
  } else if (reply && typeof reply === "object") {
    return Number(reply.proto);
  }
  return -1;
}

async function suiteWith(name, client, proto, prefix) {
  await client.ping();
  const hello = await client.call("HELLO", String(proto));
  check(helloProto(hello) === proto, `${name}: HELLO ${proto} proto = ${JSON.stringify(hello)}`);
  if (client.condition) {
    // ioredis 6 negotiates RESP3 itself (HELLO 3 at connect); it falls back to 2 on an error.
    check(client.condition.protocol === proto || client.condition.protocol === undefined,
      `${name}: negotiated protocol ${client.condition.protocol}, want ${proto}`);
  }
  // Lua false is a nil reply in both protocols.
  check((await client.eval("return false", 0)) === null, `${name}: eval false is not null`);
  ok(name + " handshake");

  const redlock = new Redlock([client], { retryCount: 0, driftFactor: 0.01 });
  const k1 = `${prefix}-${name}-a`, k2 = `${prefix}-${name}-b`;

  // Multi-resource acquire (all-or-nothing script, EVALSHA then EVAL).
  const lock = await redlock.acquire([k1, k2], 5000);
  check((await client.get(k1)) === lock.value && (await client.get(k2)) === lock.value, `${name}: values`);
  let ttl = await client.pttl(k1);
  check(ttl > 0 && ttl <= 5000, `${name}: pttl after acquire ${ttl}`);
  ok(name + " acquire");

  // Held: any overlapping acquire is refused (its acquire checks EXISTS).
  await rejects(redlock.acquire([k2], 5000), ExecutionError, `${name}: second acquire`);
  check((await client.get(k2)) === lock.value, `${name}: the refused acquire's clean-up released the holder`);
  ok(name + " exclusive");

  const extended = await lock.extend(20000);
  ttl = await client.pttl(k2);
  check(ttl > 5000 && ttl <= 20000, `${name}: pttl after extend ${ttl}`);
  check(extended.value === lock.value, `${name}: extend changed the value`);
  await rejects(lock.extend(1000), ExecutionError, `${name}: extending the superseded lock object`);
  ok(name + " extend");

  const res = await extended.release();
  const stats = await Promise.all(res.attempts);
  check(stats.length === 1 && stats[0].membershipSize === 1 && stats[0].votesFor.size === 1,
    `${name}: release attempts ${stats.length}, votes for ${stats[0] && stats[0].votesFor.size}`);
  check((await client.exists(k1, k2)) === 0, `${name}: keys left after release`);
  ok(name + " release");

  const again = await redlock.acquire([k1], 2000);
  await again.release();
  ok(name + " reacquire");

  // Contention: using() with retries; a counter updated across an await
  // inside the critical section loses nothing.
  const contended = new Redlock([client], { retryCount: 500, retryDelay: 5, retryJitter: 5 });
  let inside = 0, counter = 0, overlaps = 0;
  const workers = [];
  for (let w = 0; w < 4; w++) {
    workers.push((async () => {
      for (let r = 0; r < 4; r++) {
        await contended.using([`${prefix}-${name}-c`], 5000, async () => {
          if (++inside !== 1) overlaps++;
          const c = counter;
          await client.ping();
          counter = c + 1;
          inside--;
        });
      }
    })());
  }
  await Promise.all(workers);
  check(overlaps === 0 && counter === 16, `${name}: overlaps ${overlaps}, counter ${counter}`);
  ok(name + " using");
}

async function suite(addr, prefix) {
  const { host, port } = hostPort(addr);
  const c5 = new IORedis5({ host, port, maxRetriesPerRequest: 0 });
  const c6 = new IORedis6({ host, port, maxRetriesPerRequest: 0 });
  try {
    await suiteWith("ioredis5", c5, 2, prefix);
    await suiteWith("ioredis6", c6, 3, prefix);
  } finally {
    c5.disconnect();
    c6.disconnect();
  }
}

async function sentinel(addrs, prefix) {
  const sentinels = addrs.split(",").map(hostPort);
  const client = new IORedis6({
    sentinels,
    name: "any-service-name",
    sentinelRetryStrategy: () => 50,
    retryStrategy: () => 50,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
  });
  client.on("error", () => {}); // reconnects are expected
  const redlock = new Redlock([client], { retryCount: 0 });
  const key = `${prefix}-sentinel`;
  const l = await redlock.acquire([key], 5000);
  await l.release();
  const before = client.stream.remotePort;
  console.log("connected " + before);

  const rl = readline.createInterface({ input: process.stdin });
  const line = await new Promise((resolve) => rl.once("line", resolve));
  rl.close();
  check(line === "killed", "unexpected stdin " + line);

  const deadline = Date.now() + 20000;
  for (;;) {
    try {
      const l2 = await redlock.acquire([key], 5000);
      await l2.release();
      break;
    } catch (e) {
      if (Date.now() > deadline) throw new Error("no fail-over within 20s: " + e);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const after = client.stream.remotePort;
  check(after !== before, `still on port ${before}`);
  console.log("reconnected " + after);
  client.disconnect();
}

async function main() {
  const [mode, arg, prefix] = process.argv.slice(2);
  if (mode === "suite") await suite(arg, prefix);
  else if (mode === "sentinel") await sentinel(arg, prefix);
  else throw new Error("unknown mode " + mode);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  },
);
