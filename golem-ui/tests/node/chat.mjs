// Drives golem-ui's `POST /ai-sdk` with the `ai` package's own chat (`AbstractChat`, what
// `useChat` wraps, over `DefaultChatTransport`), so the bodies are the ones the AI SDK
// sends: two messages, `regenerate()`, `regenerate({ messageId })` of the first answer, a
// third message, then the first message edited (`sendMessage({ text, messageId })`).
// Prints the chat's messages after each action as [id, role, text] rows (the id of the
// server's answers; the chat makes its user messages' own); exits non-zero when the chat
// reports an error.
//
//   node chat.mjs <base-url> <chat-id>
import { AbstractChat, DefaultChatTransport } from 'ai';

const [base, id] = process.argv.slice(2);

/** The chat's state, as a framework binding keeps it (React's, without React). */
class State {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class Chat extends AbstractChat {
  constructor(options) {
    super({ ...options, state: new State() });
  }
}

const chat = new Chat({ id, transport: new DefaultChatTransport({ api: `${base}/ai-sdk` }) });

const rows = () =>
  chat.messages.map((message) => [
    message.role === 'assistant' ? message.id : null,
    message.role,
    message.parts
      .filter((part) => part.type === 'text')
      .map((part) => part.text)
      .join(''),
  ]);

const seen = {};
const check = (name) => {
  if (chat.error !== undefined) throw chat.error;
  seen[name] = rows();
};

await chat.sendMessage({ text: 'Hi' });
check('first');
await chat.sendMessage({ text: 'A joke?' });
check('second');
await chat.regenerate();
check('regenerated');
await chat.regenerate({ messageId: chat.messages[1].id });
check('first regenerated');
await chat.sendMessage({ text: 'More?' });
check('third');
await chat.sendMessage({ text: 'Hello', messageId: chat.messages[0].id });
check('first edited');
console.log(JSON.stringify(seen));
