// Opens an HTML file in a real headless Chromium through the DevTools
// protocol, collects everything the page's console would show (console
// errors and warnings, uncaught exceptions, browser log entries such as
// failed loads) and every request that is not for the file itself, and
// writes a full-page screenshot. Before the page under test it opens a
// control page that does log an error and fetch from the network, so a
// harness that hears nothing fails instead of passing.
//
// With SELECTOR and COUNT, also that at least COUNT elements match the
// selector and each is drawn (a bounding box wider than zero): the
// over-time plot's lines, say.
//
// usage: node --experimental-websocket render_in_chromium.mjs CHROMIUM PAGE.html SCREENSHOT.png [SELECTOR COUNT]
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [chromiumPath, pagePath, screenshotPath, selector, minCount] = process.argv.slice(2);
if (!screenshotPath) {
  console.error('usage: render_in_chromium.mjs CHROMIUM PAGE.html SCREENSHOT.png');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'launchguard-chromium-'));
const browser = spawn(chromiumPath, [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
  '--remote-debugging-port=0', `--user-data-dir=${profile}`, '--window-size=1400,1000', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe'] });

function cleanUp() {
  browser.kill('SIGKILL');
  // The browser's helpers may still be writing to the profile for a moment.
  try { rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); } catch { /* a temp dir */ }
}
function fail(message) {
  console.error(`FAIL: ${message}`);
  cleanUp();
  process.exit(1);
}
const watchdog = setTimeout(() => fail('timed out'), 90_000);

const endpoint = await new Promise((resolvePromise, reject) => {
  let text = '';
  browser.stderr.on('data', (chunk) => {
    text += chunk;
    const match = text.match(/DevTools listening on (ws:\/\/\S+)/);
    if (match) resolvePromise(match[1]);
  });
  browser.on('exit', (code) => reject(new Error(`chromium exited (${code}) before listening: ${text}`)));
}).catch((e) => fail(e.message));

const socket = new WebSocket(endpoint);
await new Promise((ok) => socket.addEventListener('open', ok));
let nextId = 1;
const pending = new Map();
const listeners = [];
socket.addEventListener('message', (event) => {
  const message = JSON.parse(event.data);
  if (message.id && pending.has(message.id)) {
    const { ok, ko } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) ko(new Error(JSON.stringify(message.error))); else ok(message.result);
  } else if (message.method) {
    for (const listener of listeners) listener(message);
  }
});
function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  socket.send(JSON.stringify({ id, method, params, sessionId }));
  return new Promise((ok, ko) => pending.set(id, { ok, ko }));
}

// Loads `url` in a fresh tab; returns what the console heard and the requests made.
async function visit(url, screenshot, expect = null) {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const heard = [];
  const requests = [];
  let loaded;
  const load = new Promise((ok) => { loaded = ok; });
  listeners.push((m) => {
    if (m.sessionId !== sessionId) return;
    if (m.method === 'Runtime.consoleAPICalled' && ['error', 'warning', 'assert'].includes(m.params.type)) {
      heard.push(`console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(' ')}`);
    } else if (m.method === 'Runtime.exceptionThrown') {
      heard.push(`exception: ${m.params.exceptionDetails.exception?.description ?? m.params.exceptionDetails.text}`);
    } else if (m.method === 'Log.entryAdded' && ['error', 'warning'].includes(m.params.entry.level)) {
      heard.push(`log ${m.params.entry.level}: ${m.params.entry.text} ${m.params.entry.url ?? ''}`);
    } else if (m.method === 'Network.requestWillBeSent') {
      requests.push(m.params.request.url);
    } else if (m.method === 'Page.loadEventFired') {
      loaded();
    }
  });
  for (const domain of ['Runtime', 'Log', 'Network', 'Page']) await send(`${domain}.enable`, {}, sessionId);
  await send('Page.navigate', { url }, sessionId);
  await load;
  await new Promise((ok) => setTimeout(ok, 1000));  // late console messages and loads
  let drawn = null;
  if (expect) {
    const { result } = await send('Runtime.evaluate', {
      expression: `Array.from(document.querySelectorAll(${JSON.stringify(expect)}))` +
        '.filter((e) => e.getBoundingClientRect().width > 0).length',
      returnByValue: true,
    }, sessionId);
    drawn = result.value;
  }
  if (screenshot) {
    const metrics = await send('Page.getLayoutMetrics', {}, sessionId);
    const size = metrics.cssContentSize ?? metrics.contentSize;
    const shot = await send('Page.captureScreenshot', {
      format: 'png', captureBeyondViewport: true,
      clip: { x: 0, y: 0, width: Math.min(size.width, 1400), height: Math.min(size.height, 4000), scale: 1 },
    }, sessionId);
    writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
  }
  await send('Target.closeTarget', { targetId });
  return { heard, requests: requests.filter((r) => r !== url), drawn };
}

const control = join(profile, 'control.html');
writeFileSync(control, '<!DOCTYPE html><title>control</title><script>console.error("control error")</script>' +
  '<img src="http://127.0.0.1:9/missing.png">');
const controlResult = await visit(pathToFileURL(control).href, null);
if (!controlResult.heard.some((h) => h.includes('control error'))) fail(`control page's console.error not heard: ${JSON.stringify(controlResult)}`);
if (controlResult.requests.length === 0) fail('control page\'s network request not seen');

const result = await visit(pathToFileURL(resolve(pagePath)).href, screenshotPath, selector);
clearTimeout(watchdog);
cleanUp();
if (result.heard.length > 0) fail(`console: ${result.heard.join('\n')}`);
if (result.requests.length > 0) fail(`the page fetched: ${result.requests.join(', ')}`);
if (selector && !(result.drawn >= Number(minCount))) fail(`${result.drawn} drawn elements match ${selector}, expected at least ${minCount}`);
console.log(`ok: no console message, no request; screenshot ${screenshotPath}`);
process.exit(0);
