// The chat page's client: posts each turn to golem-ui's `POST /api/ai-sdk` and reads the
// answer, an AI SDK UI message stream (SSE: `data: {"type": ...}` chunks, then
// `data: [DONE]`), into UI messages the way the `ai` package's reader does, rendering after
// every chunk. Plain JavaScript, no build step, no dependencies.
//
// The server keeps the thread's history; a request carries the messages as `useChat` would,
// and the server reads only the new user message, or the approval answers in the last
// assistant message's tool parts (`state: "approval-responded"`).
'use strict';

const ENDPOINT = 'api/ai-sdk';

/** The chat's thread id: new for every page load, unguessable. */
const thread = 'chat-' + Array.from(crypto.getRandomValues(new Uint8Array(12)),
  (byte) => byte.toString(16).padStart(2, '0')).join('');

/** The UI messages: `{ id, role, parts, finished }`. */
const messages = [];
let busy = false;
let userMessages = 0;

const messagesEl = document.getElementById('messages');
const form = document.getElementById('prompt');
const statusEl = document.getElementById('status');

function setStatus(state, text) {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

function setBusy(value) {
  busy = value;
  form.querySelector('button').disabled = value;
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = form.elements.text.value.trim();
  if (!text || busy) return;
  form.elements.text.value = '';
  userMessages += 1;
  messages.push({ id: `user-${userMessages}`, role: 'user', parts: [{ type: 'text', text }] });
  render();
  send();
});

// Enter sends, Shift+Enter makes a new line.
form.elements.text.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    form.requestSubmit();
  }
});

/** Posts the chat and reads the streamed answer into the messages. */
async function send() {
  setBusy(true);
  setStatus('streaming', 'Streaming…');
  let failed = null;
  try {
    const response = await fetch(ENDPOINT, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: thread, messages }),
    });
    if (!response.ok) {
      // golem-ui's refusals: {"error": {"code", "message"}}.
      const body = await response.json().catch(() => null);
      throw new Error(body?.error?.message ?? `the server answered ${response.status}`);
    }
    await readStream(response.body, (chunk) => {
      apply(chunk);
      render();
    });
  } catch (error) {
    failed = error.message;
  }
  setBusy(false);
  const last = messages[messages.length - 1];
  const error = last?.parts.find((part) => part.type === 'error');
  if (failed !== null) {
    setStatus('error', `Error: ${failed}`);
  } else if (error) {
    setStatus('error', `Error: ${error.errorText}`);
  } else if (last?.parts.some((part) => part.state === 'approval-requested')) {
    setStatus('approval', 'Waiting for your approval.');
  } else {
    setStatus('done', 'Done.');
  }
  render();
}

/** Reads an SSE body, calling `onChunk` with each JSON chunk until `[DONE]`. */
async function readStream(body, onChunk) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data === '') continue;
      if (data === '[DONE]') return;
      onChunk(JSON.parse(data));
    }
  }
}

/** Applies one UI message stream chunk to the messages. */
function apply(chunk) {
  if (chunk.type === 'start') {
    // A stream that goes on after approvals names the message it continues.
    const last = messages[messages.length - 1];
    if (last?.role === 'assistant' && last.id === chunk.messageId) {
      last.finished = false;
    } else {
      messages.push({ id: chunk.messageId, role: 'assistant', parts: [], finished: false });
    }
    return;
  }
  const message = messages[messages.length - 1];
  const parts = message.parts;
  const tool = () => parts.find((part) => part.toolCallId === chunk.toolCallId);
  const lastOf = (type) => parts.findLast((part) => part.type === type && part.id === chunk.id);
  switch (chunk.type) {
    case 'start-step':
      parts.push({ type: 'step-start' });
      break;
    case 'text-start':
    case 'reasoning-start': {
      const type = chunk.type.slice(0, -'-start'.length);
      parts.push({ type, id: chunk.id, text: '', state: 'streaming' });
      break;
    }
    case 'text-delta':
    case 'reasoning-delta':
      lastOf(chunk.type.slice(0, -'-delta'.length)).text += chunk.delta;
      break;
    case 'text-end':
    case 'reasoning-end':
      lastOf(chunk.type.slice(0, -'-end'.length)).state = 'done';
      break;
    case 'tool-input-start':
      parts.push({
        type: `tool-${chunk.toolName}`,
        toolName: chunk.toolName,
        toolCallId: chunk.toolCallId,
        state: 'input-streaming',
        inputText: '',
      });
      break;
    case 'tool-input-delta':
      tool().inputText += chunk.inputTextDelta;
      break;
    case 'tool-input-available': {
      let part = tool();
      if (!part) {
        part = { type: `tool-${chunk.toolName}`, toolName: chunk.toolName, toolCallId: chunk.toolCallId };
        parts.push(part);
      }
      Object.assign(part, { state: 'input-available', input: chunk.input });
      break;
    }
    case 'tool-approval-request':
      Object.assign(tool(), { state: 'approval-requested', approval: { id: chunk.approvalId } });
      break;
    case 'tool-output-available':
      Object.assign(tool(), { state: 'output-available', output: chunk.output });
      break;
    case 'tool-output-error':
      Object.assign(tool(), { state: 'output-error', errorText: chunk.errorText });
      break;
    case 'tool-output-denied':
      tool().state = 'output-denied';
      break;
    case 'error':
      parts.push({ type: 'error', errorText: chunk.errorText });
      break;
    case 'finish':
      message.finished = true;
      break;
    case 'finish-step':
      break;
    default:
      if (chunk.type.startsWith('data-')) {
        // A data part with an id replaces the earlier one of the same type and id.
        const earlier = chunk.id === undefined ? undefined : lastOf(chunk.type);
        if (earlier) earlier.data = chunk.data;
        else parts.push({ type: chunk.type, id: chunk.id, data: chunk.data });
      }
  }
}

/** Answers a call that waits for approval; sends once every waiting call is answered. */
function answer(part, approved, reason) {
  part.state = 'approval-responded';
  part.approval = { ...part.approval, approved };
  if (!approved && reason) part.approval.reason = reason;
  render();
  const last = messages[messages.length - 1];
  if (!last.parts.some((other) => other.state === 'approval-requested')) send();
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const show = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

function render() {
  messagesEl.replaceChildren(...messages.map(renderMessage));
}

function renderMessage(message) {
  const article = el('article', `message ${message.role}`);
  article.dataset.id = message.id;
  const rejections = new Map();
  for (const part of message.parts) {
    if (part.type === 'data-rejection' && part.data.toolCallId) {
      rejections.set(part.data.toolCallId, part.data);
    }
  }
  // The whole answer, when the server sends it, stands for the partial ones.
  const whole = message.parts.some((part) => part.type === 'data-output');
  const partials = message.parts.filter((part) => part.type === 'data-partial-output');
  for (const part of message.parts) {
    if (part.type === 'text' || part.type === 'reasoning') {
      const node = el('p', `part ${part.type}`, part.text);
      node.dataset.state = part.state ?? 'done';
      article.append(node);
    } else if (part.type.startsWith('tool-')) {
      article.append(renderTool(part, rejections.get(part.toolCallId)));
    } else if (part.type === 'data-rejection' && !part.data.toolCallId) {
      article.append(el('p', 'part rejection', `Answer rejected: ${part.data.feedback}`));
    } else if (part.type === 'data-output') {
      article.append(renderAnswer(part.data, 'done', 'output'));
    } else if (part.type === 'data-partial-output' && !whole) {
      // Without the whole answer (a server not built `with_output`), the last partial one
      // of a finished message is the answer.
      const final = message.finished && part === partials[partials.length - 1];
      article.append(renderAnswer(part.data, final ? 'done' : 'filling', 'partial'));
    } else if (part.type === 'error') {
      article.append(el('p', 'part error', part.errorText));
    }
  }
  return article;
}

function renderTool(part, rejection) {
  const section = el('section', 'part tool');
  section.dataset.state = part.state;
  section.dataset.tool = part.toolName;
  section.append(el('div', 'name', part.toolName));
  const input = part.input === undefined ? part.inputText : JSON.stringify(part.input);
  section.append(el('div', 'input', input));
  switch (part.state) {
    case 'output-available':
      section.append(el('div', 'output', `→ ${show(part.output)}`));
      if (part.approval?.approved) section.append(el('div', 'approval', 'approved by you'));
      break;
    case 'output-error':
      section.append(el('div', 'feedback', rejection
        ? `rejected (retry ${rejection.retry} of ${rejection.maxRetries}): ${rejection.feedback}`
        : `failed: ${part.errorText}`));
      break;
    case 'output-denied':
      section.append(el('div', 'output', part.approval?.reason
        ? `denied: ${part.approval.reason}` : 'denied'));
      break;
    case 'approval-requested': {
      const approval = el('div', 'approval');
      const approve = el('button', 'approve', 'Approve');
      const reason = el('input', 'reason');
      reason.placeholder = 'why not (optional)';
      const deny = el('button', 'deny', 'Deny');
      approve.addEventListener('click', () => answer(part, true));
      deny.addEventListener('click', () => answer(part, false, reason.value.trim()));
      approval.append(el('span', 'ask', 'Needs your approval: '), approve, deny, reason);
      section.append(approval);
      break;
    }
    case 'approval-responded':
      section.append(el('div', 'approval', part.approval.approved ? 'approved' : 'denied'));
      break;
  }
  return section;
}

function renderAnswer(data, state, source) {
  const section = el('section', 'part answer');
  section.dataset.state = state;
  section.dataset.source = source;
  section.append(el('div', 'title', state === 'done' ? 'Answer' : 'Answer (filling in…)'));
  const list = el('dl');
  for (const [key, value] of Object.entries(data ?? {})) {
    list.append(el('dt', null, key), el('dd', null, value === null ? '—' : show(value)));
  }
  section.append(list);
  return section;
}
