// Drives the chat-web example's page in headless Chromium with puppeteer-core: types a
// prompt, reads the page while the scripted model holds its stream (text arrived, the run
// not over), sees the rejected call and the call that waits for approval, approves it,
// reads the structured answer while it fills in, then the finished page, and saves a
// screenshot; then, on a new thread, denies the booking with a reason. The model goes on only when this script posts `<base>/test/go` (a route the
// Rust test adds), so every state read here is one the page showed before the run ended.
// Prints what the page showed at each of those points as JSON; exits non-zero on any
// failure, a page error included.
//
//   node chat_web.mjs <base-url> <chromium> <screenshot.png>
import puppeteer from 'puppeteer-core';

const [base, executablePath, screenshot] = process.argv.slice(2);

/** What the page shows: the status, and each message's parts. Runs in the page. */
function snapshot() {
  const text = (node) => node.textContent;
  const part = (node) => {
    const kind = node.classList[1];
    const shown = { kind };
    if (node.dataset.state) shown.state = node.dataset.state;
    if (kind === 'tool') {
      shown.tool = node.dataset.tool;
      shown.lines = [...node.children].slice(1).map((child) => {
        const buttons = [...child.querySelectorAll('button')].map(text);
        return buttons.length ? `${text(child.firstChild)}[${buttons.join('] [')}]` : text(child);
      });
    } else if (kind === 'answer') {
      shown.source = node.dataset.source;
      shown.title = text(node.querySelector('.title'));
      shown.fields = Object.fromEntries([...node.querySelectorAll('dt')]
        .map((dt) => [text(dt), text(dt.nextElementSibling)]));
    } else {
      shown.text = text(node);
    }
    return shown;
  };
  return {
    status: document.getElementById('status').dataset.state,
    messages: [...document.querySelectorAll('#messages > .message')].map((message) => ({
      role: message.classList[1],
      parts: [...message.querySelectorAll(':scope > .part')].map(part),
    })),
  };
}

/** Lets the scripted model stream on past the point where it holds. */
async function go() {
  const response = await fetch(`${base}/test/go`, { method: 'POST' });
  if (!response.ok) throw new Error(`/test/go answered ${response.status}`);
}

const browser = await puppeteer.launch({
  executablePath,
  headless: 'shell',
  // As root (CI) Chromium's sandbox cannot start.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
try {
  const page = await browser.newPage();
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.setViewport({ width: 820, height: 900 });
  await page.goto(`${base}/`);

  await page.type('#prompt textarea', 'Book a table for two at Chez Golem tonight at 8pm');
  await page.click('#prompt button');
  // The model holds after its first words: they are on the page, the run is not over.
  await page.waitForFunction(
    () => document.querySelector('.message.assistant .part.text')?.textContent === 'Let me ',
  );
  const streaming = await page.evaluate(snapshot);

  await go();
  // The run pauses for the booking's approval.
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'approval');
  const paused = await page.evaluate(snapshot);

  await page.click('.tool .approve');
  // The model holds before the answer's last fragment: four of its five fields are in.
  await page.waitForFunction(
    () => document.querySelectorAll('.answer[data-state="filling"] dt').length === 4,
  );
  const filling = await page.evaluate(snapshot);

  await go();
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'done');
  const done = await page.evaluate(snapshot);
  await page.screenshot({ path: screenshot, fullPage: true });

  // A new page load is a new thread; this time the booking is denied, with a reason.
  await page.reload();
  await page.type('#prompt textarea', 'Book a table for two at Chez Golem tonight at 8pm');
  await page.click('#prompt button');
  await page.waitForFunction(
    () => document.querySelector('.message.assistant .part.text')?.textContent === 'Let me ',
  );
  await go();
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'approval');
  await page.type('.tool .reason', 'we eat at home tonight');
  await page.click('.tool .deny');
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'done');
  const denied = await page.evaluate(snapshot);

  if (errors.length) throw new Error(`the page reported errors: ${errors.join('; ')}`);
  console.log(JSON.stringify({ streaming, paused, filling, done, denied }));
} finally {
  await browser.close();
}
