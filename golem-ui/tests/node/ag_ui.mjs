// Drives golem-ui's `POST /ag-ui` with `@ag-ui/client`'s HttpAgent, whose event verifier
// rejects streams out of order. Prints the agent's messages (and the interrupt, for the
// approval, the shared state for partial output) as JSON; exits non-zero on any protocol error.
//
//   node ag_ui.mjs <base-url> tools|approval|partial|reasoning|agent
import { HttpAgent } from '@ag-ui/client';

const [base, scenario] = process.argv.slice(2);

function agent(threadId, content) {
  return new HttpAgent({
    url: `${base}/ag-ui`,
    threadId,
    initialMessages: [{ id: 'u1', role: 'user', content }],
  });
}

/** The RUN_FINISHED event of a run, seen through a subscriber. */
async function run(agent, parameters) {
  let finished;
  await agent.runAgent(parameters, {
    onRunFinishedEvent({ event }) {
      finished = event;
    },
  });
  return finished;
}

if (scenario === 'tools') {
  const adder = agent('tools', '2 + 3?');
  await run(adder, { runId: 'r1' });
  console.log(JSON.stringify({ messages: adder.messages }));
} else if (scenario === 'approval') {
  const deleter = agent('approval', 'Delete a.txt');
  const paused = await run(deleter, { runId: 'r1' });
  const resume = paused.outcome.interrupts.map((interrupt) => ({
    interruptId: interrupt.id,
    status: 'resolved',
    payload: { approved: true },
  }));
  const done = await run(deleter, { runId: 'r2', resume });
  console.log(JSON.stringify({ outcome: paused.outcome, done: done.outcome, messages: deleter.messages }));
} else if (scenario === 'partial') {
  // The agent's shared state follows STATE_SNAPSHOT and the STATE_DELTA patches.
  const forecaster = agent('partial', 'Weather in Paris?');
  await run(forecaster, { runId: 'r1' });
  console.log(JSON.stringify({ state: forecaster.state, messages: forecaster.messages }));
} else if (scenario === 'reasoning') {
  // Streamed reasoning in the first run, a whole thinking part in the second.
  const thinker = agent('reasoning', 'Roll?');
  await run(thinker, { runId: 'r1' });
  thinker.addMessage({ id: 'u2', role: 'user', content: 'Again?' });
  await run(thinker, { runId: 'r2' });
  console.log(JSON.stringify({ messages: thinker.messages }));
} else if (scenario === 'agent') {
  // The delegated agent's events, attributed to it, pass the verifier's subagent checks.
  const delegator = agent('agent', '2 + 3?');
  const subagents = [];
  await delegator.runAgent(
    { runId: 'r1' },
    {
      onSubagentStartedEvent({ event }) {
        subagents.push(event);
      },
      onSubagentFinishedEvent({ event }) {
        subagents.push(event);
      },
    },
  );
  console.log(JSON.stringify({ subagents, messages: delegator.messages }));
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
