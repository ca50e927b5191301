// __NAME__: a lock client for tumbler (clients/PROTOCOL.md), written by
// `tumbler client new`. It speaks RESP to one Redis node with Node's own
// modules only — SET NX PX to acquire, a compare-and-delete script to
// release, a compare-and-PEXPIRE script to extend — so that it runs as it
// is. To put your own lock library under tumbler, replace the three calls
// marked LIBRARY with your library's, and keep the mapping of what it says
// to ok, fail and info.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const readline = require('readline');
const tls = require('tls');

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

class NotSent extends Error {} // the command never left: it had no effect

let init = null, conn = null, ttl = 0, timeout = 1000, steps = null, stepID = 0;
let buffered = Buffer.alloc(0), waiting = null; // RESP replies read so far, and who waits for one

const lines = readline.createInterface({ input: process.stdin });
const queue = [];
let lineWaiter = null;
lines.on('line', (l) => { if (lineWaiter) { const w = lineWaiter; lineWaiter = null; w(l); } else queue.push(l); });
lines.on('close', () => process.exit(0));
const nextLine = () => queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => { lineWaiter = r; });

const write = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const monotonicNS = () => Number(process.hrtime.bigint()); // CLOCK_MONOTONIC
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// step reports a step when init armed it and waits for tumbler's continue.
async function step(name, key) {
  if (steps && !steps.includes(name)) return;
  write({ type: 'step', id: ++stepID, step: name, key });
  await nextLine();
}

function secret(s) {
  if (s.file) return fs.readFileSync(s.file, 'utf8').replace(/\n+$/, '');
  if (!(s.env in process.env)) throw new Error('the variable ' + s.env + ' is not set');
  return process.env[s.env];
}

function drop() { if (conn) conn.destroy(); conn = null; buffered = Buffer.alloc(0); }

// dial connects to the node (TLS when init gives it) and logs in.
async function dial() {
  const [host, port] = init.nodes[0].addr.split(/:(?=[^:]*$)/);
  await new Promise((resolve, reject) => {
    const t = init.tls;
    const opts = { host, port: Number(port) };
    const c = t ? tls.connect({ ...opts, ca: t.ca_file && fs.readFileSync(t.ca_file), cert: t.cert_file && fs.readFileSync(t.cert_file),
      key: t.key_file && fs.readFileSync(t.key_file), servername: t.server_name || host, rejectUnauthorized: !t.insecure_skip_verify })
      : net.connect(opts);
    const timer = setTimeout(() => { c.destroy(); reject(new Error('connect timeout')); }, timeout);
    c.once(t ? 'secureConnect' : 'connect', () => { clearTimeout(timer); conn = c; resolve(); });
    c.once('error', (e) => { clearTimeout(timer); reject(e); });
    c.on('data', (d) => { buffered = Buffer.concat([buffered, d]); if (waiting) waiting(); });
    c.on('close', () => { if (conn === c) conn = null; if (waiting) waiting(); });
  });
  if (init.auth) {
    const pw = secret(init.auth.password);
    await command(...(init.auth.user ? ['AUTH', init.auth.user, pw] : ['AUTH', pw]));
  }
}

// parse takes one reply off buffered: [value] or null when incomplete.
function parse() {
  const end = buffered.indexOf('\r\n');
  if (end < 0) return null;
  const line = buffered.toString('utf8', 0, end), kind = line[0], rest = line.slice(1);
  if (kind === '$') {
    const n = Number(rest);
    if (n < 0) { buffered = buffered.subarray(end + 2); return [null]; }
    if (buffered.length < end + 2 + n + 2) return null;
    const v = buffered.toString('utf8', end + 2, end + 2 + n);
    buffered = buffered.subarray(end + 2 + n + 2);
    return [v];
  }
  buffered = buffered.subarray(end + 2);
  if (kind === '-') return [new Error(rest)];
  return [rest];
}

// command sends one command and waits for its reply (read_timeout_ms).
async function command(...args) {
  if (!conn) {
    try { await dial(); } catch (e) { throw new NotSent('not sent: ' + e.message); }
  }
  conn.write('*' + args.length + '\r\n' + args.map((a) => '$' + Buffer.byteLength(String(a)) + '\r\n' + a + '\r\n').join(''));
  const deadline = Date.now() + timeout;
  for (;;) {
    const r = parse();
    if (r) { if (r[0] instanceof Error) throw r[0]; return r[0]; }
    if (!conn) throw new Error('connection closed');
    const left = deadline - Date.now();
    if (left <= 0) throw new Error('read timeout after ' + timeout + ' ms');
    await new Promise((resolve) => { const t = setTimeout(resolve, left); waiting = () => { clearTimeout(t); resolve(); }; });
    waiting = null;
  }
}

const validity = (start, ms) => start + ms * 1e6 - (ms * 1e6 / 100 + 2e6);

async function acquire(key, waitMS) {
  const token = crypto.randomBytes(16).toString('hex'), deadline = Date.now() + waitMS;
  for (;;) {
    const start = monotonicNS();
    // LIBRARY: the lock library's acquire.
    if (await command('SET', key, token, 'NX', 'PX', ttl) === 'OK') {
      await step('after-set', key);
      return { type: 'ok', lease: { token, valid_until_ns: validity(start, ttl) } };
    }
    if (Date.now() >= deadline) return { type: 'fail', error: 'held by another owner', held: true };
    await sleep(10);
  }
}

async function release(key, token) {
  // LIBRARY: the lock library's release.
  return await command('EVAL', RELEASE, 1, key, token) === '1' ? { type: 'ok' } : { type: 'fail', error: 'not held' };
}

async function extend(key, token, ms) {
  const start = monotonicNS();
  // LIBRARY: the lock library's extend.
  if (await command('EVAL', EXTEND, 1, key, token, ms) !== '1') return { type: 'fail', error: 'not held' };
  return { type: 'ok', lease: { token, valid_until_ns: validity(start, ms) } };
}

// open answers init: the node, the credentials (read from where init says
// they are), TLS, the TTL and the steps to report.
async function open(req) {
  init = req; ttl = req.ttl_ms; timeout = req.read_timeout_ms; steps = req.steps || null;
  if (req.connect !== 'node') return { type: 'fail', error: 'connect ' + req.connect + ': this client locks one node (connect node)' };
  const opts = Object.keys(req.options || {});
  if (opts.length) return { type: 'fail', error: 'options unknown: ' + opts.join(', ') };
  try { await dial(); } catch (e) { return { type: 'fail', error: String(e.message || e) }; }
  return { type: 'ok', library: '__NAME__ (Node ' + process.versions.node + ', RESP over net)' };
}

async function serve(req) {
  const lease = req.lease || {};
  try {
    switch (req.type) {
      case 'init': return await open(req);
      case 'acquire': return await acquire(req.key, req.wait_ms);
      case 'release': return await release(req.key, lease.token);
      case 'extend': return await extend(req.key, lease.token, req.ttl_ms);
      default: return { type: 'fail', error: 'unsupported request ' + req.type };
    }
  } catch (e) {
    if (e instanceof NotSent) return { type: 'fail', error: e.message };
    drop(); // sent, no answer: it may have taken effect
    return { type: 'info', error: String(e.message || e) };
  }
}

(async () => {
  for (;;) {
    const req = JSON.parse(await nextLine());
    const rep = await serve(req);
    rep.in_reply_to = req.id;
    write(rep);
  }
})();
