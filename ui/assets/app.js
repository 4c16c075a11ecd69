// The locknode dashboard. It polls the node's JSON API once a second and
// renders it; every value from the server goes into the page as text
// (textContent), never as markup.
'use strict';

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);

const state = {
  auth: sessionStorage.getItem('locknode-auth') || '', // base64 "user:password"
  user: sessionStorage.getItem('locknode-user') || '',
  cursors: [''], // "after" of each page visited; the last is the page shown
  next: '',
  locks: [],
  historyKey: '',
  forceKey: '',
  timer: 0,
  polling: false,
  locksDue: 0, // when the listing is next asked for
};

class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(method, path, body) {
  const headers = { 'X-Locknode-Dashboard': '1' };
  if (state.auth) headers['Authorization'] = 'Basic ' + state.auth;
  const opts = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
  if (!resp.ok) {
    throw new APIError(resp.status, data && data.code, (data && data.message) || resp.statusText);
  }
  return data;
}

// Dots escaped too: a browser would resolve a "." or ".." segment away.
const keyPath = (key) => '/v1/locks/' + encodeURIComponent(key).replace(/\./g, '%2E');

// ---- formatting ----

function fmtDur(ms) {
  if (ms == null || !isFinite(ms)) return '—';
  const neg = ms < 0;
  ms = Math.abs(ms);
  let s;
  if (ms < 10000) s = (ms / 1000).toFixed(1) + 's';
  else if (ms < 60000) s = Math.floor(ms / 1000) + 's';
  else if (ms < 3600e3) s = Math.floor(ms / 60000) + 'm' + String(Math.floor(ms / 1000) % 60).padStart(2, '0') + 's';
  else if (ms < 86400e3) s = Math.floor(ms / 3600e3) + 'h' + String(Math.floor(ms / 60000) % 60).padStart(2, '0') + 'm';
  else s = Math.floor(ms / 86400e3) + 'd' + Math.floor(ms / 3600e3) % 24 + 'h';
  return neg ? '-' + s : s;
}

function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = String(text);
  return e;
}

function metaChips(meta) {
  const out = [];
  if (!meta) return out;
  for (const k of Object.keys(meta).sort()) out.push(el('span', 'meta', k + '=' + meta[k]));
  return out;
}

// ---- login ----

function showLogin(msg) {
  stopPolling();
  $('main').hidden = true;
  $('locks-error').textContent = ''; // the sign-in form speaks for a refusal
  $('login').hidden = false;
  $('login-error').textContent = msg || '';
  $('live').textContent = 'signed out';
  $('live').className = 'live';
  $('login-user').focus();
}

function b64(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

$('login').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  state.auth = b64($('login-user').value + ':' + $('login-pass').value);
  state.user = $('login-user').value;
  try {
    await api('GET', '/v1/status');
  } catch (e) {
    state.auth = '';
    $('login-error').textContent = e.status === 401 ? 'Wrong user or password.' : e.message;
    return;
  }
  $('login-error').textContent = '';
  sessionStorage.setItem('locknode-auth', state.auth);
  sessionStorage.setItem('locknode-user', state.user);
  $('login-pass').value = '';
  start();
});

$('logout').addEventListener('click', () => {
  state.auth = state.user = '';
  sessionStorage.removeItem('locknode-auth');
  sessionStorage.removeItem('locknode-user');
  showLogin('');
});

// ---- polling ----

function start() {
  $('login').hidden = true;
  $('main').hidden = false;
  $('who').textContent = state.user ? 'user ' + state.user : '';
  $('logout').hidden = !state.user;
  startPolling();
}

function startPolling() {
  if (state.polling) return;
  state.polling = true;
  poll();
}

function stopPolling() {
  state.polling = false;
  clearTimeout(state.timer);
}

// refresh polls now instead of at the next tick.
function refresh() {
  state.locksDue = 0;
  clearTimeout(state.timer);
  if (state.polling) poll();
}

async function poll() {
  const results = await Promise.allSettled([loadLocks(), loadCluster(), loadActivity(), loadHistory()]);
  const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failed.some((e) => e.status === 401)) {
    // Without stored credentials nobody has tried yet: the form alone
    // asks. Stored ones refused mean the user or password changed.
    const msg = state.auth ? 'Signed out: this node no longer accepts that user and password.' : '';
    state.auth = '';
    sessionStorage.removeItem('locknode-auth');
    showLogin(msg);
    return;
  }
  const live = $('live');
  if (failed.length) {
    live.textContent = 'error: ' + failed[0].message;
    live.className = 'live bad';
  } else {
    live.textContent = 'live · ' + new Date().toLocaleTimeString();
    live.className = 'live ok';
  }
  if (state.polling) {
    clearTimeout(state.timer);
    state.timer = setTimeout(poll, POLL_MS);
  }
}

// ---- locks ----

// filtered reports whether the listing is narrowed by more than a
// prefix (then the server's filtered listing answers the rows).
function filtered() {
  return $('state').value !== 'all' || $('owner').value.trim() !== '' || $('meta').value.trim() !== '';
}

// listQuery is the dashboard listing's query for the current controls.
function listQuery(extra) {
  const q = new URLSearchParams({ stale: 'true', prefix: $('prefix').value, state: $('state').value });
  if ($('owner').value.trim()) q.set('owner', $('owner').value.trim());
  for (const t of $('meta').value.split(/\s+/)) if (t) q.append('meta', t);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q;
}

async function loadLocks() {
  // The listing reads every matching lock for its totals: on a big table
  // it is polled less often, ten times as long apart as it took.
  if (Date.now() < state.locksDue) return;
  const t0 = Date.now();
  const after = state.cursors[state.cursors.length - 1];
  const sort = $('sort').value;
  const limit = Number($('limit').value);
  // Unfiltered by key: the list API's cursor paging, which reaches every
  // lock, and the filtered listing for the totals only. Otherwise the
  // server filters, orders and pages by offset over every match, so the
  // order holds across pages.
  const byCursor = sort === 'key' && !filtered();
  let res, page;
  try {
    if (byCursor) {
      [res, page] = await Promise.all([
        api('GET', '/v1/ui/locks?' + listQuery({ limit: '0' })),
        api('GET', '/v1/locks?' + new URLSearchParams({ stale: 'true', limit: String(limit), prefix: $('prefix').value, after })),
      ]);
    } else {
      res = await api('GET', '/v1/ui/locks?' + listQuery({ order: sort, limit: String(limit), offset: after || '0' }));
    }
  } catch (e) {
    $('locks-error').textContent = e.message;
    throw e;
  }
  $('locks-error').textContent = '';
  const fetchedAt = Date.now();
  state.locksDue = fetchedAt + Math.max(0, 10 * (fetchedAt - t0) - POLL_MS);
  const locks = (byCursor ? page.locks : res.locks) || [];
  state.locks = locks;
  if (byCursor) {
    state.next = page.next || '';
  } else {
    const next = (res.offset || 0) + locks.length;
    state.next = locks.length && next < (res.total || 0) ? String(next) : '';
  }
  renderLocks(locks, fetchedAt);
  renderTotals(res);
  $('prev').disabled = state.cursors.length <= 1;
  $('next').disabled = !state.next;
  const range = byCursor ? '' : ' · ' + ((res.offset || 0) + (locks.length ? 1 : 0)) + '–' + ((res.offset || 0) + locks.length) + ' of ' + (res.total || 0);
  $('pageinfo').textContent = 'page ' + state.cursors.length + range;
}

const plural = (n, one) => n + ' ' + (n === 1 ? one : one + 's');

// renderTotals shows the totals of every lock that matches, not of the
// page shown.
function renderTotals(res) {
  const t = res.totals || {};
  const parts = [plural(t.locks || 0, 'lock'), (t.held || 0) + ' held', plural(t.holders || 0, 'holder'),
    plural(t.waiters || 0, 'waiter'), (t.contended || 0) + ' contended', plural(t.sessions || 0, 'session')];
  let s = ($('prefix').value || filtered() ? 'matching: ' : 'total: ') + (res.partial ? 'at least ' : '') + parts.join(' · ');
  if (res.partial) s += ' (counted part of the keys only: narrow the prefix for exact totals)';
  $('totals').textContent = s;
  $('totals').classList.toggle('partial', !!res.partial);
}

function renderLocks(locks, fetchedAt) {
  const body = $('locks').tBodies[0];
  const rows = [];
  for (const l of locks) {
    const tr = el('tr');
    tr.dataset.key = l.key;
    if (l.key === state.historyKey) tr.classList.add('selected');
    tr.append(el('td', 'key', l.key));
    const modes = [...new Set((l.holders || []).map((h) => h.mode))];
    tr.append(el('td', null, (modes.join(', ') || '—') + (l.permits ? ' (' + l.permits + ')' : '')));

    const holders = el('td');
    for (const h of l.holders || []) {
      const d = el('div', 'holder');
      d.append(el('span', 'owner', h.owner), ...metaChips(h.meta));
      if (h.granted_ms) {
        const since = el('span', 'since', 'since ' + fmtTime(h.granted_ms));
        since.dataset.granted = h.granted_ms;
        d.append(since);
      }
      d.append(el('span', 'fence', '#' + h.fence));
      if (h.count > 1) d.append(el('span', 'muted', '×' + h.count));
      const ttl = el('span', 'ttl');
      if (h.ttl_ms > 0) ttl.dataset.deadline = fetchedAt + h.ttl_ms;
      else ttl.textContent = 'no TTL';
      d.append(ttl);
      holders.append(d);
    }
    if (!(l.holders || []).length) holders.append(el('span', 'muted', l.lock_delay_remaining_ms ? 'free (lock-delay)' : 'free'));
    tr.append(holders);

    const waiters = el('td');
    (l.waiters || []).forEach((w, i) => {
      const d = el('div', 'waiter');
      d.append(el('span', 'muted', (i + 1) + '.'), el('span', 'owner', w.owner), el('span', 'muted', w.mode), ...metaChips(w.meta));
      const t = el('span', 'wait');
      if (w.queued_ms) t.dataset.queued = w.queued_ms;
      else if (w.wait_ms > 0) t.dataset.giveup = fetchedAt + w.wait_ms;
      d.append(t);
      waiters.append(d);
    });
    tr.append(waiters);

    const act = el('td');
    const b = el('button', 'danger force', 'force-release');
    b.title = 'admin: end every hold of this lock';
    b.addEventListener('click', (ev) => { ev.stopPropagation(); openForce(l.key); });
    act.append(b);
    tr.append(act);
    tr.addEventListener('click', () => openHistory(l.key));
    rows.push(tr);
  }
  if (!rows.length) {
    const tr = el('tr');
    const td = el('td', 'muted', 'no locks' + ($('prefix').value || filtered() ? ' match' : '') + (state.next ? ' on this page' : ''));
    td.colSpan = 5;
    tr.append(td);
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  tickClocks();
}

// tickClocks updates countdowns and ages between polls.
function tickClocks() {
  const now = Date.now();
  for (const e of document.querySelectorAll('.ttl[data-deadline]')) {
    const rem = Number(e.dataset.deadline) - now;
    e.textContent = 'TTL ' + fmtDur(Math.max(rem, 0));
    e.classList.toggle('low', rem < 5000);
  }
  for (const e of document.querySelectorAll('.since[data-granted]')) {
    e.textContent = 'since ' + fmtTime(Number(e.dataset.granted)) + ' (' + fmtDur(now - Number(e.dataset.granted)) + ')';
  }
  for (const e of document.querySelectorAll('.wait[data-queued]')) {
    e.textContent = 'waiting ' + fmtDur(now - Number(e.dataset.queued));
  }
  for (const e of document.querySelectorAll('.wait[data-giveup]')) {
    e.textContent = 'gives up in ' + fmtDur(Math.max(Number(e.dataset.giveup) - now, 0));
  }
}
setInterval(tickClocks, 200);

let typingTimer = 0;
for (const id of ['prefix', 'owner', 'meta']) {
  $(id).addEventListener('input', () => {
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => { state.cursors = ['']; refresh(); }, 250);
  });
}
$('state').addEventListener('change', () => { state.cursors = ['']; refresh(); });
$('sort').addEventListener('change', () => { state.cursors = ['']; refresh(); });
$('limit').addEventListener('change', () => { state.cursors = ['']; refresh(); });
$('next').addEventListener('click', () => { if (state.next) { state.cursors.push(state.next); refresh(); } });
$('prev').addEventListener('click', () => { if (state.cursors.length > 1) { state.cursors.pop(); refresh(); } });

// ---- history ----

function openHistory(key) {
  state.historyKey = key;
  $('history-key').textContent = key;
  $('history-section').hidden = false;
  for (const tr of $('locks').tBodies[0].rows) tr.classList.toggle('selected', tr.dataset.key === key);
  refresh();
}

$('history-close').addEventListener('click', () => {
  state.historyKey = '';
  $('history-section').hidden = true;
  for (const tr of $('locks').tBodies[0].rows) tr.classList.remove('selected');
});

async function loadHistory() {
  const key = state.historyKey;
  if (!key) return;
  const h = await api('GET', keyPath(key) + '/history');
  if (key !== state.historyKey) return;
  const live = state.locks.find((l) => l.key === key);
  const now = Date.now();
  const rows = (h.entries || []).map((e) => {
    const tr = el('tr');
    let meta = e.meta;
    if (!meta && live) {
      const ho = (live.holders || []).find((x) => x.owner === e.owner && x.fence === e.fence);
      meta = ho && ho.meta;
    }
    const m = el('td');
    m.append(...metaChips(meta));
    const held = e.ended_ms ? e.ended_ms - e.granted_ms : now - e.granted_ms;
    tr.append(el('td', 'owner', e.owner), el('td', null, e.mode || '—'), el('td', 'fence', '#' + e.fence), m,
      el('td', null, fmtTime(e.granted_ms)), el('td', null, fmtDur(held)),
      el('td', 'end end-' + e.end, e.end + (e.ended_ms ? ' at ' + fmtTime(e.ended_ms) : '')));
    return tr;
  });
  if (!rows.length) {
    const tr = el('tr');
    const td = el('td', 'muted', 'no grants recorded by this node (history is kept in memory per node)');
    td.colSpan = 7;
    tr.append(td);
    rows.push(tr);
  }
  $('history').tBodies[0].replaceChildren(...rows);
}

// ---- force-release ----

function openForce(key) {
  state.forceKey = key;
  $('force-key').textContent = key;
  $('force-reason').value = '';
  $('force-error').textContent = '';
  $('force').showModal();
}

$('force-form').addEventListener('submit', async (ev) => {
  if (!ev.submitter || ev.submitter.value !== 'go') return; // cancel closes
  ev.preventDefault();
  try {
    await api('POST', '/v1/ui/force-release', { key: state.forceKey, reason: $('force-reason').value });
  } catch (e) {
    $('force-error').textContent = e.status === 403 ? 'Refused: ' + e.message : e.message;
    return;
  }
  $('force').close();
  refresh();
});

// ---- cluster ----

async function loadCluster() {
  const v = await api('GET', '/v1/ui/cluster');
  const self = v.nodes.find((n) => n.self);
  let leaderCommit = 0;
  for (const n of v.nodes) {
    if (n.status && n.status.state === 'leader') leaderCommit = n.status.commit_index;
  }
  if (self && self.status) {
    const s = self.status;
    $('node').textContent = 'node ' + s.id + ' · ' + s.state + ' · leader ' + (s.leader || 'unknown');
    $('cluster-totals').textContent = '— whole cluster: ' + plural(s.locks || 0, 'lock') + ' · ' +
      plural(s.waiters || 0, 'waiter') + ' · ' + plural(s.sessions || 0, 'session') + ' open';
  }
  const rows = v.nodes.map((n) => {
    const tr = el('tr');
    tr.dataset.node = n.id;
    const s = n.status;
    const name = el('td', s && s.state === 'leader' ? 'leader' : null, n.id + (s && s.state === 'leader' ? ' ★ leader' : '') + (n.self ? ' (this node)' : ''));
    tr.append(name, el('td', 'muted', n.http_addr || (s && s.http_addr) || '—'));
    if (!s) {
      const td = el('td', 'error', n.error || 'no answer');
      td.colSpan = 7;
      tr.append(td);
      return tr;
    }
    const lag = (leaderCommit || s.commit_index) - s.applied_index;
    tr.append(el('td', null, s.state), el('td', null, s.term), el('td', null, s.applied_index), el('td', null, s.commit_index),
      el('td', lag > 100 ? 'error' : null, Math.max(lag, 0)), el('td', null, s.locks), el('td', null, mirrorText(s.mirror)));
    return tr;
  });
  $('cluster').tBodies[0].replaceChildren(...rows);
}

function mirrorText(m) {
  if (!m) return 'off';
  let s = m.running ? (m.synced ? 'synced' : 'syncing') : 'stopped';
  if (m.connected === false) s += ', disconnected';
  if (m.lag_entries) s += ', lag ' + m.lag_entries + ' entries';
  if (m.last_error) s += ', error: ' + m.last_error;
  return s;
}

// ---- activity ----

const SERIES = [
  ['grants', 'grants/s'],
  ['releases', 'releases/s'],
  ['expiries', 'expiries/s'],
  ['forced', 'forced/s'],
  ['contended', 'contended waits/s'],
];

async function loadActivity() {
  let a;
  try {
    a = await api('GET', '/v1/ui/activity');
  } catch (e) {
    if (e.status === 404) { $('activity-section').hidden = true; return; }
    throw e;
  }
  const samples = a.samples || [];
  const span = samples.length > 1 ? (samples[samples.length - 1].t - samples[0].t) * 1000 : 0;
  const charts = SERIES.map(([field, label]) => countChart(label, samples.map((s) => s[field] || 0), span));
  charts.push(waitChart(samples, a.wait_buckets || [], span));
  $('charts').replaceChildren(...charts);
}

const SVG = 'http://www.w3.org/2000/svg';

// chart draws values (0 ≤ v ≤ max) as a line over a time axis from
// span ago to now; yTop and yBottom label the ends of the value axis.
function chart(label, summary, values, max, yTop, yBottom, span) {
  const W = 220, H = 50;
  const box = el('div', 'chart');
  const top = el('div', 'label');
  top.append(el('span', null, label), el('span', 'summary', summary));
  const plot = el('div', 'plot');
  const yAxis = el('div', 'yaxis');
  yAxis.append(el('span', 'ytop', yTop), el('span', 'ybottom', yBottom));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('preserveAspectRatio', 'none');
  const pl = document.createElementNS(SVG, 'polyline');
  const n = Math.max(values.length - 1, 1);
  pl.setAttribute('points', values.map((v, i) => (i * W / n).toFixed(1) + ',' + (H - 2 - v * (H - 4) / Math.max(max, 1)).toFixed(1)).join(' '));
  svg.append(pl);
  plot.append(yAxis, svg);
  const xAxis = el('div', 'xaxis');
  xAxis.append(el('span', null, span ? '−' + fmtDur(span) : ''), el('span', null, 'now'));
  box.append(top, plot, xAxis);
  return box;
}

function countChart(label, values, span) {
  const max = Math.max(0, ...values);
  const now = values.length ? values[values.length - 1] : 0;
  return chart(label, 'now ' + now + ' · max ' + max, values, max, String(max), '0', span);
}

// waitChart plots the bucket of each second's p99 queue wait: its axis
// and labels are the buckets' ranges, not single values.
function waitChart(samples, buckets, span) {
  // 0: no wait ended in the second; b+1: bucket b.
  const levels = samples.map((s) => (s.wait_p99_ms ? (s.wait_p99_bucket || 0) + 1 : 0));
  const max = Math.max(0, ...levels);
  const name = (lv) => (lv ? buckets[lv - 1] || '?' : 'none');
  const now = levels.length ? levels[levels.length - 1] : 0;
  const c = chart('wait p99', 'now ' + name(now) + ' · max ' + name(max), levels, max, max ? name(max) : '', 'none', span);
  c.classList.add('wait-chart');
  return c;
}

start();
