// The chat page: @ag-ui/client's HttpAgent against agent-host's AG-UI route, no framework.
//
// One HttpAgent per conversation keeps the threadId (the conversation id) and the messages; each send is one run.
// Text is shown delta by delta as TEXT_MESSAGE_CONTENT events arrive; a run that ends with an interrupt outcome
// shows its tool approvals, and the next run answers them with `resume`. The body's data-* attributes say what
// the page has done, for the sample's browser test (tests/samples/test_agui_web_sample.py).
import { HttpAgent, randomUUID, type Interrupt, type Message, type ResumeEntry, type RunAgentParameters } from "@ag-ui/client";
import "./style.css";

const agentName = document.body.dataset.agent ?? "support";
const endpoint = `/api/agents/${encodeURIComponent(agentName)}/agui`;

function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`The page has no #${id}.`);
  return element as T;
}

const transcript = byId<HTMLOListElement>("transcript");
const approvals = byId<HTMLElement>("approvals");
const approvalList = byId<HTMLUListElement>("approval-list");
const errorLine = byId<HTMLParagraphElement>("error");
const statusLine = byId<HTMLParagraphElement>("status");
const keyField = byId<HTMLInputElement>("key");
const messageField = byId<HTMLInputElement>("message");
const sendButton = byId<HTMLButtonElement>("send");
const threadLabel = byId<HTMLElement>("thread-id");

let agent = startConversation();
let runsDone = 0;
// Answers given so far to the interrupts the last run finished with; a run resumes once every one is answered.
let answers = new Map<string, ResumeEntry>();

function startConversation(): HttpAgent {
  const started = new HttpAgent({ url: endpoint });
  threadLabel.textContent = started.threadId;
  document.body.dataset.threadId = started.threadId;
  return started;
}

/** One line of the transcript; returns the element its text goes in. */
function addEntry(role: "user" | "assistant" | "tool", text: string): HTMLElement {
  const item = document.createElement("li");
  item.className = `entry ${role}`;
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = { user: "You", assistant: agentName, tool: "Tool" }[role];
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  item.append(who, body);
  transcript.append(item);
  return body;
}

function showError(text: string): void {
  errorLine.textContent = text;
}

/** What went wrong, from an HttpAgent error: a refused request carries its status and the JSON error body. */
function describe(error: unknown): string {
  const failure = error as { status?: number; payload?: { error?: { code?: string; message?: string } } };
  const body = failure.payload?.error;
  if (failure.status !== undefined && body?.code !== undefined) {
    return `${failure.status} ${body.code}: ${body.message ?? ""}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function setBusy(busy: boolean): void {
  sendButton.disabled = busy || approvals.hidden === false;
  statusLine.textContent = busy ? "Running…" : "";
}

/** One run of the agent: show what it streams; on a refusal, take the unsent message back into the field. */
async function run(parameters: RunAgentParameters, sent?: { message: Message; entry: HTMLElement }): Promise<void> {
  const key = keyField.value.trim();
  agent.headers = key ? { "x-functions-key": key } : {};
  const events: string[] = [];
  let reply: HTMLElement | undefined;
  showError("");
  setBusy(true);
  try {
    await agent.runAgent(parameters, {
      onEvent: ({ event }) => {
        events.push(event.type);
      },
      onTextMessageStartEvent: () => {
        reply = addEntry("assistant", "");
      },
      onTextMessageContentEvent: ({ event }) => {
        reply ??= addEntry("assistant", "");
        reply.textContent += event.delta;
      },
      onTextMessageEndEvent: () => {
        reply = undefined;
      },
      onToolCallEndEvent: ({ toolCallName, toolCallArgs }) => {
        addEntry("tool", `${toolCallName}(${JSON.stringify(toolCallArgs)})`);
      },
      onToolCallResultEvent: ({ event }) => {
        addEntry("tool", `→ ${event.content}`);
      },
      onRunFinishedEvent: (finished) => {
        if (finished.outcome === "interrupt") showApprovals(finished.interrupts);
      },
      onRunErrorEvent: ({ event }) => {
        showError(`${event.code ?? "run_error"}: ${event.message}`);
      },
    });
  } catch (error) {
    if (sent !== undefined) {
      // Refused before it ran (a wrong key, a bad request): the host has not stored the message, so neither do we.
      agent.setMessages(agent.messages.filter((message) => message.id !== sent.message.id));
      sent.entry.closest("li")?.remove();
      messageField.value = String(sent.message.content);
    }
    showError(describe(error));
  } finally {
    runsDone += 1;
    document.body.dataset.runs = String(runsDone);
    document.body.dataset.lastRunEvents = events.join(" ");
    setBusy(false);
  }
}

function showApprovals(interrupts: Interrupt[]): void {
  answers = new Map();
  approvalList.replaceChildren(...interrupts.map((interrupt) => approvalItem(interrupt, interrupts.length)));
  approvals.hidden = false;
}

function approvalItem(interrupt: Interrupt, count: number): HTMLLIElement {
  const item = document.createElement("li");
  item.className = "approval";
  const call = interrupt.metadata?.agent_framework?.function_call as { name?: string; arguments?: unknown } | undefined;
  const what = `${call?.name ?? interrupt.toolCallId ?? interrupt.id}(${JSON.stringify(call?.arguments ?? {})})`;
  const text = document.createElement("span");
  text.textContent = interrupt.message ?? "Approve this call?";
  const shown = document.createElement("code");
  shown.textContent = what;
  const buttons = ([["Approve", true], ["Reject", false]] as const).map(([label, approved]) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.setAttribute("aria-label", `${label} ${what}`);
    button.addEventListener("click", () => {
      answers.set(interrupt.id, { interruptId: interrupt.id, status: "resolved", payload: { approved } });
      addEntry("user", `${approved ? "Approved" : "Rejected"} ${what}`);
      item.remove();
      if (answers.size === count) {
        approvals.hidden = true;
        void run({ resume: [...answers.values()] });
      }
    });
    return button;
  });
  item.append(text, shown, ...buttons);
  return item;
}

byId<HTMLFormElement>("send-form").addEventListener("submit", (submitted) => {
  submitted.preventDefault();
  const text = messageField.value.trim();
  if (!text || sendButton.disabled) return;
  const message: Message = { id: randomUUID(), role: "user", content: text };
  agent.addMessage(message);
  const entry = addEntry("user", text);
  messageField.value = "";
  void run({}, { message, entry });
});

byId<HTMLButtonElement>("new-thread").addEventListener("click", () => {
  agent = startConversation();
  transcript.replaceChildren();
  approvals.hidden = true;
  showError("");
  setBusy(false);
});

document.body.dataset.ready = "true";
