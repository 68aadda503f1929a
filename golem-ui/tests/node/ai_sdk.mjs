// Drives golem-ui's `POST /ai-sdk` with the `ai` package's own reader: each response is
// parsed with `parseJsonEventStream` against `uiMessageChunkSchema` (the chunk schema
// `useChat` validates with) and rebuilt into a UI message by `readUIMessageStream`.
// Prints the rebuilt assistant messages as JSON; exits non-zero on any protocol error.
//
//   node ai_sdk.mjs <base-url> tools|approval|partial|agent
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const [base, scenario] = process.argv.slice(2);

/** Posts `body` and rebuilds the assistant message, continuing `message` when given. */
async function send(body, message) {
  const response = await fetch(`${base}/ai-sdk`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) {
    throw new Error(`status ${response.status}: ${await response.text()}`);
  }
  if (response.headers.get('x-vercel-ai-ui-message-stream') !== 'v1') {
    throw new Error('the response is not marked as a UI message stream');
  }
  const chunks = parseJsonEventStream({
    stream: response.body,
    schema: uiMessageChunkSchema,
  }).pipeThrough(
    new TransformStream({
      transform(parsed, controller) {
        if (!parsed.success) throw parsed.error;
        controller.enqueue(parsed.value);
      },
    }),
  );
  let last;
  preliminary = [];
  for await (const rebuilt of readUIMessageStream({
    message: message === undefined ? undefined : structuredClone(message),
    stream: chunks,
    terminateOnError: true,
    onError: (error) => {
      throw error;
    },
  })) {
    last = rebuilt;
    for (const part of rebuilt.parts) {
      if (part.preliminary === true) preliminary.push(structuredClone(part));
    }
  }
  return last;
}

/** The tool parts with a preliminary output, as the reader rebuilt them, in order. */
let preliminary = [];

const user = (text) => ({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] });

if (scenario === 'tools') {
  const message = await send({ id: 'tools', messages: [user('2 + 3?')] });
  console.log(JSON.stringify([message]));
} else if (scenario === 'approval') {
  const asked = await send({ id: 'approval', messages: [user('Delete a.txt')] });
  // What `addToolApprovalResponse` does to the part, then the chat sends again.
  const answered = structuredClone(asked);
  for (const part of answered.parts) {
    if (part.state === 'approval-requested') {
      part.state = 'approval-responded';
      part.approval = { ...part.approval, approved: true };
    }
  }
  const done = await send({ id: 'approval', messages: [user('Delete a.txt'), answered] }, answered);
  console.log(JSON.stringify([asked, done]));
} else if (scenario === 'partial') {
  const message = await send({ id: 'partial', messages: [user('Weather in Paris?')] });
  console.log(JSON.stringify([message]));
} else if (scenario === 'agent') {
  // A delegated agent's work arrives as preliminary outputs of its call, then its result.
  const message = await send({ id: 'agent', messages: [user('2 + 3?')] });
  console.log(JSON.stringify({ message, preliminary }));
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
