// The agent-host inspector: reads the app's own JSON routes and renders what the host holds. No framework, no
// network access beyond the app; every value from the server is rendered as text, never as markup.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  // The page is served at <prefix>/inspector; every route it calls is under the same prefix.
  const API = location.pathname.replace(/\/+$/, "").replace(/\/inspector$/, "");
  const state = {
    key: new URLSearchParams(location.search).get("code") || "",
    agents: [],
    workflows: [],
    agent: null,
    conversation: null,
    bundle: null,
    conversationsToken: null,
    workflow: null,
    run: null,
    runsToken: null,
    busy: false,
  };

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // -- talking to the app ------------------------------------------------------------------------------------------

  async function call(method, path, body, accept) {
    const headers = { Accept: accept || "application/json" };
    if (state.key) headers["x-functions-key"] = state.key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(API + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "same-origin",
    });
    if (response.status === 401) {
      $("key-form").hidden = false;
      throw new ApiError(401, "unauthorized", "This app needs its function key: enter it at the top of the page.");
    }
    return response;
  }

  async function callJson(method, path, body) {
    const response = await call(method, path, body);
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) {
      const error = (data && data.error) || {};
      throw new ApiError(response.status, error.code || "http_" + response.status, error.message || response.statusText);
    }
    return { status: response.status, data };
  }

  const enc = encodeURIComponent;
  const conversationPath = (agent, id) => `/agents/${enc(agent)}/conversations/${enc(id)}`;

  // -- small rendering helpers -------------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function say(message) {
    $("status").textContent = message;
  }

  function fail(error) {
    const status = error instanceof ApiError && error.status ? `${error.status} ` : "";
    const text = error instanceof ApiError ? `${error.message} (${status}${error.code})` : String(error);
    $("error").textContent = text;
  }

  function clearError() {
    $("error").textContent = "";
  }

  function shortJson(value) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return text === undefined ? "" : text;
  }

  // Ids are long and alike (turn ids, af-call-..., run ids): shown short, whole in the tooltip and the data attributes.
  function shortId(id) {
    const text = String(id ?? "");
    return text.length > 16 ? `${text.slice(0, 8)}…${text.slice(-4)}` : text;
  }

  function idNode(id) {
    return el("span", { class: "id", title: id, text: shortId(id) });
  }

  // Times arrive as ISO 8601 in UTC: shown in the reader's time zone, the exact value in the element's datetime.
  const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

  function readableTime(iso) {
    const date = iso ? new Date(iso) : null;
    return date && !Number.isNaN(date.getTime()) ? timeFormat.format(date) : iso || "";
  }

  function timeNode(iso) {
    return el("time", { datetime: iso, title: iso, text: readableTime(iso) });
  }

  function argumentsOf(value) {
    if (typeof value !== "string") return value;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }

  // A tool call as a person reads it: cancel_order(order_id: "A1"), not its JSON.
  function callText(name, value) {
    const args = argumentsOf(value);
    if (args && typeof args === "object" && !Array.isArray(args)) {
      const parts = Object.entries(args).map(([key, item]) => `${key}: ${JSON.stringify(item)}`);
      return `${name}(${parts.join(", ")})`;
    }
    return args === undefined || args === null || args === "" ? `${name}()` : `${name}(${shortJson(args)})`;
  }

  function fieldList(value) {
    const list = el("dl", { class: "fields" });
    for (const [key, item] of Object.entries(value)) {
      list.append(el("dt", { text: key }), el("dd", { text: typeof item === "string" ? item : JSON.stringify(item) }));
    }
    return list;
  }

  function bytes(n) {
    if (n === undefined || n === null) return "";
    if (n < 1024) return `${n} B`;
    return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KiB (${n.toLocaleString("en")} B)`;
  }

  function setHash(params) {
    const text = new URLSearchParams(params).toString();
    history.replaceState(null, "", `${location.pathname}${location.search}#${text}`);
  }

  function guard(action) {
    return async (event) => {
      if (event) event.preventDefault();
      clearError();
      try {
        await action(event);
      } catch (error) {
        fail(error);
      }
    };
  }

  // -- views -------------------------------------------------------------------------------------------------------

  function showView(name) {
    const conversations = name === "conversations";
    $("conversations-view").hidden = !conversations;
    $("workflows-view").hidden = conversations;
    $("show-conversations").setAttribute("aria-pressed", String(conversations));
    $("show-workflows").setAttribute("aria-pressed", String(!conversations));
  }

  // -- conversations -----------------------------------------------------------------------------------------------

  async function loadConversationList(more) {
    if (!state.agent) return;
    const params = new URLSearchParams({ top: "50" });
    if (more && state.conversationsToken) params.set("continuationToken", state.conversationsToken);
    const { data } = await callJson("GET", `/agents/${enc(state.agent)}/conversations?${params}`);
    const list = $("conversation-list");
    if (!more) list.replaceChildren();
    for (const item of data.conversations) {
      const label = item.lastOperationTime
        ? `${item.conversationId} · ${readableTime(item.lastOperationTime)}`
        : item.conversationId;
      const button = el("button", {
        type: "button",
        class: "item",
        "data-conversation": item.conversationId,
        "aria-current": item.conversationId === state.conversation ? "true" : null,
        onclick: guard(() => openConversation(item.conversationId)),
        text: label,
      });
      list.append(el("li", {}, button));
    }
    if (!list.children.length) list.append(el("li", { class: "muted", text: "No stored conversations yet." }));
    state.conversationsToken = data.continuationToken;
    $("more-conversations").hidden = !data.continuationToken;
  }

  async function openConversation(id) {
    state.conversation = id;
    state.bundle = null;
    setHash({ agent: state.agent, conversation: id });
    for (const button of document.querySelectorAll("#conversation-list button.item")) {
      button.setAttribute("aria-current", String(button.dataset.conversation === id));
    }
    $("conversation").hidden = false;
    $("conversation-title").textContent = `Conversation ${id} (agent ${state.agent})`;
    await refreshConversation();
  }

  async function refreshConversation() {
    const { agent, conversation } = state;
    let bundle = null;
    try {
      ({ data: bundle } = await callJson("GET", `/inspector${conversationPath(agent, conversation)}`));
    } catch (error) {
      if (!(error instanceof ApiError && error.code === "conversation_not_found")) throw error;
      say(`${error.message}`);
    }
    if (agent !== state.agent || conversation !== state.conversation) return; // another one was opened meanwhile
    const deleted = bundle && bundle.deleted ? bundle.deleted : null;
    if (deleted) bundle = null;
    state.bundle = bundle;
    $("conversation-title").textContent = `Conversation ${conversation} (agent ${agent})${deleted ? ": deleted" : ""}`;
    $("conversation").classList.toggle("deleted", Boolean(deleted));
    renderSummary(bundle, deleted);
    const pending = bundle ? bundle.conversation.pendingApprovals : [];
    renderTranscript(bundle ? bundle.messages : [], pending, bundle ? bundle.turns : [], deleted);
    renderApprovals(pending);
    renderRetention(bundle);
    renderSizes(bundle);
    renderTurns(bundle);
  }

  function renderSummary(bundle, deleted) {
    const summary = $("summary");
    summary.replaceChildren();
    if (deleted) {
      summary.append(
        el("dt", { text: "Deleted" }),
        el("dd", { id: "deleted-at" }, timeNode(deleted.deletedAt), ` with its ${deleted.removedTurns} turn(s)`),
        el("dt", { text: "Next message" }),
        el("dd", { text: "starts a new conversation with this id" }),
      );
      return;
    }
    if (!bundle) {
      summary.append(el("dt", { text: "Stored" }), el("dd", { text: "nothing yet: send a message to start it" }));
      return;
    }
    const c = bundle.conversation;
    const rows = [
      ["History kept by", c.history],
      ["Messages", `${c.messageCount} (${bundle.messages.filter((m) => m.excluded).length} excluded by compaction)`],
      ["Turns", String(c.turnCount)],
      ["Stored size", `${bytes(c.stateBytes)} of ${bytes(c.retention.maxStateBytes)}`],
      ["Retention", `${c.retention.mode}, watermarks ${c.retention.lowWatermark} – ${c.retention.highWatermark}`],
      [
        "Deleted by retention",
        `${c.truncation.evictedMessages || 0} messages, ${c.truncation.expiredAnswers || 0} answer copies`,
      ],
      ["Updated", timeNode(c.updatedAt)],
    ];
    if (c.capacityError) rows.push(["Over budget", c.capacityError.message]);
    for (const [name, value] of rows) {
      summary.append(el("dt", { text: name }), typeof value === "string" ? el("dd", { text: value }) : el("dd", {}, value));
    }
  }

  function messageDomId(messageId) {
    return `msg-${messageId}`;
  }

  function messageLink(messageId, label) {
    return el("a", {
      href: `#${enc(messageDomId(messageId))}`,
      text: label || messageId,
      onclick: (event) => {
        event.preventDefault();
        const target = document.getElementById(messageDomId(messageId));
        if (!target) {
          say(`Message ${messageId} is no longer stored.`);
          return;
        }
        target.hidden = false;
        target.classList.remove("hidden-excluded");
        target.classList.add("highlight");
        target.scrollIntoView({ block: "center" });
        target.focus();
        setTimeout(() => target.classList.remove("highlight"), 1500);
      },
    });
  }

  function contentLine(text, id) {
    return el("p", { class: "content-line" }, text, id ? [" ", idNode(id)] : []);
  }

  function contentLines(message, pendingById) {
    const lines = [];
    for (const content of message.contents || []) {
      if (content.type === "function_call") {
        lines.push(contentLine(`Tool call ${callText(content.name, content.arguments)}`, content.call_id));
      } else if (content.type === "function_result") {
        lines.push(contentLine(`Tool result: ${shortJson(content.result)}`, content.call_id));
      } else if (content.type === "function_approval_request") {
        const call = content.function_call || {};
        const pending = pendingById.get(content.id);
        const asked = `${pending ? "Waiting for approval" : "Approval requested"}: ${callText(call.name, call.arguments)}`;
        lines.push(contentLine(asked, content.id));
        if (pending) lines.push(approvalButtons(pending, "approval-actions"));
      } else if (content.type === "function_approval_response") {
        const call = content.function_call || {};
        lines.push(contentLine(`Approval ${content.approved ? "granted" : "refused"}: ${callText(call.name, call.arguments)}`, content.id));
      } else if (content.type !== "text") {
        lines.push(contentLine(`${content.type}: ${shortJson(content)}`));
      }
    }
    return lines;
  }

  // Approve and Reject for one pending approval: beside the message that asked, or in the panel when it is gone.
  function approvalButtons(item, className) {
    const call = callText(item.toolName, item.arguments);
    return el(
      "div",
      { class: className, "data-approval": item.id },
      el("button", {
        type: "button",
        "aria-label": `Approve ${call}`,
        text: "Approve",
        onclick: guard(() => sendTurn({ approvals: [{ id: item.id, approved: true }] }, `Approved ${call}`)),
      }),
      el("button", {
        type: "button",
        "aria-label": `Reject ${call}`,
        text: "Reject",
        onclick: guard(() => sendTurn({ approvals: [{ id: item.id, approved: false }] }, `Rejected ${call}`)),
      }),
    );
  }

  function renderMessage(message, pendingById) {
    const classes = ["message", `role-${message.role}`];
    if (message.excluded) classes.push("excluded");
    if (message.summaryOf) classes.push("summary-message");
    if (message.excluded && !$("show-excluded").checked) classes.push("hidden-excluded");
    const head = el(
      "div",
      { class: "message-head" },
      el("span", {
        class: "role",
        text:
          message.authorName && message.authorName.toLowerCase() !== message.role
            ? `${message.role} (${message.authorName})`
            : message.role,
      }),
      timeNode(message.createdAt),
      message.excluded
        ? el("span", { class: "badge excluded-badge", text: `excluded: ${message.excludeReason || "no reason given"}` })
        : null,
      message.summaryOf ? el("span", { class: "badge summary-badge", text: `summary of ${message.summaryOf.length} messages` }) : null,
    );
    const parts = [head];
    if (message.text) parts.push(el("p", { class: "message-text", text: message.text }));
    const lines = contentLines(message, pendingById);
    if (lines.some((line) => line.classList.contains("approval-actions"))) classes.push("asks-approval");
    parts.push(...lines);
    if (message.summaryOf) {
      parts.push(el("p", { class: "links" }, "Replaces: ", message.summaryOf.map((id) => messageLink(id))));
    }
    if (message.summarizedBy) {
      parts.push(el("p", { class: "links" }, "Summarized by: ", messageLink(message.summarizedBy)));
    }
    const label = `${message.role} message${message.excluded ? ", excluded by compaction" : ""}${
      message.summaryOf ? ", a summary" : ""
    }`;
    return el("li", { id: messageDomId(message.messageId), class: classes.join(" "), tabindex: "-1", "aria-label": label }, parts);
  }

  // A failed turn leaves no message: its receipt keeps what it was sent, shown where the turn happened.
  function renderFailedTurn(turn) {
    const sent = turn.input || {};
    const answers = (sent.approvals || []).map((a) => `${a.approved ? "approved" : "rejected"} ${shortId(a.id)}`);
    return el(
      "li",
      { class: "message failed-turn", "data-turn": turn.turnId, tabindex: "-1", "aria-label": "failed turn" },
      el("div", { class: "message-head" }, el("span", { class: "role", text: "failed turn" }), idNode(turn.turnId), timeNode(turn.completedAt)),
      sent.message ? el("p", { class: "message-text", text: sent.message }) : null,
      answers.length ? el("p", { class: "content-line", text: `Approval answers: ${answers.join(", ")}` }) : null,
      el("p", { class: "failure", text: turn.error ? `${turn.error.code}: ${turn.error.message}` : "The turn failed." }),
      el("p", { class: "help", text: "Not stored in the transcript: the model is not sent this." }),
    );
  }

  function renderTranscript(messages, pending, turns, deleted) {
    const list = $("transcript");
    const pendingById = new Map((pending || []).map((item) => [item.id, item]));
    const nodes = messages.map((message) => renderMessage(message, pendingById));
    // Each failed turn goes after the last message stored before it ended (times need not rise along the
    // transcript: a summary compaction inserted is younger than the messages after it).
    const times = messages.map((message) => Date.parse(message.createdAt));
    const failed = (turns || []).filter((turn) => turn.status === "failed");
    for (const turn of failed.sort((a, b) => Date.parse(a.completedAt) - Date.parse(b.completedAt))) {
      const at = Date.parse(turn.completedAt);
      let index = times.length;
      while (index > 0 && !(times[index - 1] <= at)) index -= 1;
      nodes.splice(index, 0, renderFailedTurn(turn));
      times.splice(index, 0, at);
    }
    list.replaceChildren(...nodes);
    if (deleted) list.append(el("li", { class: "muted", text: "This conversation was deleted; nothing of it is kept." }));
    else if (!nodes.length) list.append(el("li", { class: "muted", text: "No messages yet." }));
  }

  // The panel lists what waits, linked to the message that asked; an approval whose message is gone gets its buttons.
  function renderApprovals(pending) {
    const list = $("approvals");
    list.replaceChildren();
    for (const item of pending || []) {
      const asking = document.querySelector(`#transcript [data-approval="${CSS.escape(item.id)}"]`);
      const messageId = asking ? asking.closest("li.message").id.replace(/^msg-/, "") : null;
      list.append(
        el(
          "li",
          { class: "approval", "data-approval": item.id },
          el("code", { text: callText(item.toolName, item.arguments) }),
          messageId ? messageLink(messageId, "Answer it beside its message") : approvalButtons(item, "approval-actions"),
        ),
      );
    }
    $("no-approvals").hidden = Boolean(pending && pending.length);
  }

  function renderRetention(bundle) {
    const retention = bundle ? bundle.conversation.retention : null;
    if (!retention || document.activeElement?.closest("#retention-form")) return; // never overwrite what is typed
    $("retention-mode").value = retention.mode;
    $("retention-budget").value = retention.maxStateBytes;
    $("retention-high").value = retention.highWatermark;
    $("retention-low").value = retention.lowWatermark;
  }

  async function applyRetention() {
    const body = {
      mode: $("retention-mode").value,
      maxStateBytes: Number($("retention-budget").value),
      highWatermark: Number($("retention-high").value),
      lowWatermark: Number($("retention-low").value),
    };
    const { status, data } = await callJson("PUT", `${conversationPath(state.agent, state.conversation)}/retention`, body);
    say(
      status === 200
        ? `Retention is now ${data.retention.mode}, ${data.retention.maxStateBytes} bytes; it applies from the next turn.`
        : "Retention change queued behind running turns; it will apply.",
    );
    document.activeElement?.blur();
    await refreshConversation();
  }

  function renderSizes(bundle) {
    const chart = $("size-chart");
    const tbody = $("size-table").querySelector("tbody");
    chart.replaceChildren();
    tbody.replaceChildren();
    $("size-sections").replaceChildren();
    if (!bundle) {
      $("size-note").textContent = "";
      return;
    }
    // The size when each kept turn began (its receipt keeps it), then the size now.
    const points = bundle.sizes.map((size, index) => ({ turn: index + 1, bytes: size.stateBytes, turnId: size.turnId }));
    const budget = bundle.budget;
    const sections = bundle.bytes;
    for (const [name, value] of [
      ["Messages", sections.messages],
      ["Turn records", sections.turnRecords],
      ["Session", sections.session],
      ["Pending approvals", sections.pendingApprovals],
      ["Other", sections.other],
      ["Total", sections.total],
    ]) {
      $("size-sections").append(el("dt", { text: name }), el("dd", { text: bytes(value) }));
    }
    for (const point of points) {
      tbody.append(el("tr", {}, el("td", { text: String(point.turn) }), el("td", { text: String(point.bytes) })));
    }
    const kept = points.length - 1;
    $("size-note").textContent =
      `Stored size when each of the last ${kept} turn${kept === 1 ? "" : "s"} with a receipt began, then now; ` +
      `budget ${budget.maxStateBytes} B, retention trims at the high watermark (${budget.highWatermarkBytes} B) ` +
      `down to the low one (${budget.lowWatermarkBytes} B).`;
    chart.append(sizeChart(points, budget));
  }

  function sizeChart(points, budget) {
    const ns = "http://www.w3.org/2000/svg";
    const width = 640;
    const height = 220;
    const pad = { left: 64, right: 12, top: 12, bottom: 28 };
    const svg = document.createElementNS(ns, "svg");
    const node = (tag, attrs, text) => {
      const n = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
      if (text !== undefined) n.textContent = text;
      svg.append(n);
      return n;
    };
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-labelledby", "size-chart-title size-chart-desc");
    const latest = points.length ? points[points.length - 1] : null;
    node("title", { id: "size-chart-title" }, "State bytes per turn");
    node(
      "desc",
      { id: "size-chart-desc" },
      latest
        ? `${points.length} observations; latest ${latest.bytes} bytes after turn ${latest.turn}; budget ${budget.maxStateBytes} bytes.`
        : "No observations yet.",
    );
    // Against the budget a young conversation is a flat line at the bottom: zoom to the data until it matters.
    const largest = Math.max(0, ...points.map((p) => p.bytes));
    const zoomed = largest < budget.lowWatermarkBytes / 2;
    const top = (zoomed ? largest * 1.25 : Math.max(budget.maxStateBytes, largest) * 1.05) || 1;
    const firstTurn = points.length ? points[0].turn : 0;
    const lastTurn = points.length ? Math.max(points[points.length - 1].turn, firstTurn + 1) : 1;
    const x = (turn) => pad.left + ((turn - firstTurn) / (lastTurn - firstTurn)) * (width - pad.left - pad.right);
    const y = (value) => height - pad.bottom - (value / top) * (height - pad.top - pad.bottom);
    node("line", { x1: pad.left, y1: height - pad.bottom, x2: width - pad.right, y2: height - pad.bottom, stroke: "#8c959f" });
    node("line", { x1: pad.left, y1: pad.top, x2: pad.left, y2: height - pad.bottom, stroke: "#8c959f" });
    for (const [name, value, label] of [
      ["budget", budget.maxStateBytes, "budget"],
      ["high", budget.highWatermarkBytes, "high"],
      ["low", budget.lowWatermarkBytes, "low"],
    ]) {
      if (value > top) continue;
      node("line", { class: name, x1: pad.left, x2: width - pad.right, y1: y(value), y2: y(value) });
      node("text", { x: 4, y: y(value) + 4 }, `${label} ${Math.round(value / 1024)}K`);
    }
    if (zoomed) {
      node("text", { x: pad.left + 6, y: pad.top + 10 }, "zoomed in: the budget and watermarks are far above");
      node("text", { x: 4, y: y(largest) + 4 }, `${Math.round(largest / 1024)}K`);
    }
    node("text", { x: pad.left, y: height - 8 }, `turn ${firstTurn}`);
    node("text", { x: width - pad.right - 60, y: height - 8 }, `turn ${lastTurn}`);
    if (points.length) {
      node("polyline", { class: "series", points: points.map((p) => `${x(p.turn)},${y(p.bytes)}`).join(" ") });
      for (const p of points) {
        node("circle", { class: "point", cx: x(p.turn), cy: y(p.bytes), r: 3 }).append(
          Object.assign(document.createElementNS(ns, "title"), { textContent: `turn ${p.turn}: ${p.bytes} bytes` }),
        );
      }
    }
    return svg;
  }

  function renderTurns(bundle) {
    const tbody = $("turns-table").querySelector("tbody");
    tbody.replaceChildren();
    $("expired-turns").textContent = "";
    if (!bundle) return;
    for (const turn of bundle.turns) {
      const notes = [];
      if (turn.error) notes.push(`${turn.error.code}: ${turn.error.message}`);
      if (turn.cancel) notes.push(turn.cancel.ran ? `cancelled while running, kept ${turn.cancel.keep}` : "cancelled before it ran");
      if (turn.input && turn.input.message) notes.push(`sent: ${turn.input.message}`);
      if (turn.usage && turn.usage.total_token_count) notes.push(`${turn.usage.total_token_count} tokens`);
      if (turn.approvalRequests && turn.approvalRequests.length) notes.push(`${turn.approvalRequests.length} approval request(s)`);
      if (turn.answerCopies) notes.push(`${turn.answerCopies} answer message(s) kept as a copy`);
      if (turn.keyed) notes.push("Idempotency-Key");
      const answer = el("td", {});
      turn.answerMessageIds.forEach((id, index) => {
        if (index) answer.append(", ");
        answer.append(document.getElementById(messageDomId(id)) ? messageLink(id, shortId(id)) : idNode(id));
      });
      tbody.append(
        el(
          "tr",
          { "data-turn": turn.turnId },
          el("th", { scope: "row" }, idNode(turn.turnId)),
          el("td", { text: turn.status }),
          el("td", {}, turn.completedAt ? timeNode(turn.completedAt) : ""),
          answer,
          el("td", { text: String(turn.bytes) }),
          el("td", { text: notes.join("; ") }),
        ),
      );
    }
    if (bundle.expiredTurns.length) {
      $("expired-turns").textContent = `${bundle.expiredTurns.length} older turn(s) expired (their ids answer 410).`;
    }
  }

  // -- sending a turn, and reading its event stream ----------------------------------------------------------------

  async function sendTurn(body, label) {
    if (state.busy) return;
    state.busy = true;
    $("send").disabled = true;
    const transcript = $("transcript");
    if (transcript.querySelector(".muted")) transcript.replaceChildren();
    if (body.message) {
      transcript.append(
        el("li", { class: "message role-user pending" }, el("div", { class: "message-head" }, el("span", { class: "role", text: "user" })), el("p", { class: "message-text", text: body.message })),
      );
    }
    const reply = el(
      "li",
      { id: "live-reply", class: "message role-assistant streaming", "aria-busy": "true", "data-deltas": "0", "data-events": "" },
      el("div", { class: "message-head" }, el("span", { class: "role", text: "assistant" }), el("span", { text: "replying…" })),
    );
    transcript.append(reply);
    say(label || "Sending…");
    try {
      const response = await call("POST", `${conversationPath(state.agent, state.conversation)}/turns`, body, "text/event-stream");
      const type = response.headers.get("content-type") || "";
      if (type.startsWith("text/event-stream")) {
        await readEventStream(response, (event, data) => onTurnEvent(reply, event, data));
      } else {
        const data = await response.json().catch(() => null);
        if (!response.ok && response.status !== 202) {
          const error = (data && data.error) || {};
          throw new ApiError(response.status, error.code, error.message || response.statusText);
        }
        await settleWaitedTurn(reply, response.status, data);
      }
    } finally {
      // The transcript is rendered again from the stored state below: keep what the stream showed for readers.
      document.body.dataset.lastTurnDeltas = reply.dataset.deltas;
      document.body.dataset.lastTurnEvents = reply.dataset.events;
      reply.setAttribute("aria-busy", "false");
      state.busy = false;
      $("send").disabled = false;
      await refreshConversation();
      document.body.dataset.turnsSent = String(Number(document.body.dataset.turnsSent || 0) + 1);
      loadConversationList(false).catch(fail);
    }
  }

  async function settleWaitedTurn(reply, status, data) {
    let body = data;
    let current = status;
    // A turn still running when the wait ended answers 202: read its receipt until it settles.
    for (let attempt = 0; current === 202 && attempt < 120; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const turn = await callJson("GET", `${conversationPath(state.agent, state.conversation)}/turns/${enc(data.turnId)}`);
      current = turn.status;
      body = turn.data;
    }
    const final = { completed: "turn.completed", cancelled: "turn.cancelled" }[body.status] || "turn.failed";
    onTurnEvent(reply, final, body);
  }

  async function readEventStream(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const dispatch = (block) => {
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (!data.length) return;
      let parsed = null;
      try {
        parsed = JSON.parse(data.join("\n"));
      } catch {
        parsed = data.join("\n");
      }
      onEvent(event, parsed);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
    if (buffer.trim()) dispatch(buffer);
  }

  function replyText(reply, messageId) {
    let node = reply.querySelector(`[data-message="${CSS.escape(messageId)}"]`);
    if (!node) {
      node = el("p", { class: "message-text", "data-message": messageId });
      reply.append(node);
    }
    return node;
  }

  function onTurnEvent(reply, event, data) {
    reply.dataset.events = `${reply.dataset.events} ${event}`.trim();
    if (event === "turn.started") {
      if (data.attempt > 1) {
        // The turn is run again after a crash: what the earlier attempt streamed is dropped.
        for (const node of reply.querySelectorAll("p")) node.remove();
      }
    } else if (event === "message.delta") {
      reply.dataset.deltas = String(Number(reply.dataset.deltas) + 1);
      replyText(reply, data.messageId).textContent += data.text;
    } else if (event === "tool.call") {
      reply.append(el("p", { class: "content-line", text: `Tool call ${callText(data.name, data.arguments)}` }));
    } else if (event === "tool.result") {
      reply.append(el("p", { class: "content-line", text: `Tool result: ${shortJson(data.result)}` }));
    } else if (event === "approval.requested") {
      reply.append(
        el("p", { class: "content-line", text: `Waiting for approval: ${callText(data.toolName, data.arguments)}` }),
      );
    } else if (event === "turn.completed") {
      if (!reply.querySelector(".message-text")) {
        replyText(reply, data.turnId || "answer").textContent = data.text || "";
      }
      say(data.approvalRequests && data.approvalRequests.length ? "The reply waits for a tool approval." : "Reply complete.");
    } else if (event === "turn.cancelled") {
      say("The turn was cancelled.");
    } else if (event === "turn.failed" || event === "error") {
      const error = data.error || {};
      fail(new ApiError(data.httpStatus || 0, error.code || "turn_failed", error.message || "The turn failed."));
      say("The turn failed.");
    }
  }

  // -- workflows ---------------------------------------------------------------------------------------------------

  async function loadRunList(more) {
    if (!state.workflow) return;
    const params = new URLSearchParams({ top: "50" });
    if (more && state.runsToken) params.set("continuationToken", state.runsToken);
    const { data } = await callJson("GET", `/inspector/workflows/${enc(state.workflow)}/runs?${params}`);
    const list = $("run-list");
    if (!more) list.replaceChildren();
    const runs = [...data.runs].sort((a, b) => String(b.createdTime).localeCompare(String(a.createdTime)));
    for (const run of runs) {
      list.append(
        el(
          "li",
          {},
          el("button", {
            type: "button",
            class: "item",
            "data-run": run.runId,
            "aria-current": run.runId === state.run ? "true" : null,
            title: run.runId,
            text: `${shortId(run.runId)} · ${run.status} · ${readableTime(run.createdTime)}`,
            onclick: guard(() => openRun(run.runId)),
          }),
        ),
      );
    }
    if (!list.children.length) list.append(el("li", { class: "muted", text: "No runs found." }));
    state.runsToken = data.continuationToken;
    $("more-runs").hidden = !data.continuationToken;
  }

  async function openRun(runId, waitSeconds) {
    state.run = runId;
    setHash({ workflow: state.workflow, run: runId });
    for (const button of document.querySelectorAll("#run-list button.item")) {
      button.setAttribute("aria-current", String(button.dataset.run === runId));
    }
    $("run").hidden = false;
    $("run-title").replaceChildren("Run ", idNode(runId), ` of ${state.workflow}`);
    const suffix = waitSeconds ? `?timeoutSeconds=${waitSeconds}` : "";
    const { data } = await callJson("GET", `/workflows/${enc(state.workflow)}/runs/${enc(runId)}${suffix}`);
    if (runId !== state.run) return;
    renderRun(data);
  }

  function renderRun(run) {
    const summary = $("run-summary");
    summary.replaceChildren(el("dt", { text: "Status" }), el("dd", { id: "run-status", text: run.status }));
    if (run.error) summary.append(el("dt", { text: "Error" }), el("dd", { text: `${run.error.code}: ${run.error.message}` }));
    $("outputs").textContent = run.outputs.length ? JSON.stringify(run.outputs, null, 2) : "No outputs yet.";
    const list = $("requests");
    list.replaceChildren();
    for (const request of run.pendingRequests) list.append(renderRequest(run, request));
    $("no-requests").hidden = run.pendingRequests.length > 0;
  }

  function renderRequest(run, request) {
    const id = `response-${request.requestId}`;
    const isApproval = request.data && request.data.type === "function_approval_request";
    const answer = (response) =>
      guard(async () => {
        await callJson(
          "POST",
          `/workflows/${enc(state.workflow)}/runs/${enc(run.runId)}/responses/${enc(request.requestId)}`,
          { response },
        );
        say(`Answered ${request.requestId}; the run goes on.`);
        await openRun(run.runId, 10);
        await loadRunList(false);
      });
    const raw = el(
      "details",
      { class: "raw" },
      el("summary", { text: "The request as sent (JSON)" }),
      el("pre", { class: "json", tabindex: "0", text: JSON.stringify(request.data, null, 2) }),
    );
    const item = el("li", { class: "request", "data-request": request.requestId });
    if (isApproval) {
      const call = request.data.function_call || {};
      const args = argumentsOf(call.arguments);
      item.append(
        el("p", { class: "request-what" }, `${request.executorId} asks to run the tool `, el("strong", { text: call.name }), " (request ", idNode(request.requestId), "):"),
        args && typeof args === "object" && !Array.isArray(args) && Object.keys(args).length
          ? fieldList(args)
          : el("p", { class: "content-line", text: callText(call.name, call.arguments) }),
        raw,
      );
      item.append(
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", text: "Approve", "aria-label": `Approve ${callText(call.name, call.arguments)}`, onclick: answer({ approved: true }) }),
          el("button", { type: "button", text: "Reject", "aria-label": `Reject ${callText(call.name, call.arguments)}`, onclick: answer({ approved: false }) }),
        ),
      );
      return item;
    }
    const data = request.data;
    item.append(
      el("p", { class: "request-what" }, `${request.executorId} asks (request `, idNode(request.requestId), "):"),
      data && typeof data === "object" && !Array.isArray(data) ? fieldList(data) : el("p", { class: "message-text", text: shortJson(data) }),
      raw,
    );
    const field = el("textarea", { id, rows: "2", required: true, "aria-describedby": `${id}-help` });
    const form = el(
      "form",
      { class: "inline-form" },
      el("label", { for: id, text: `Response to ${request.requestId}` }),
      field,
      el("span", { id: `${id}-help`, class: "help", text: "JSON, or plain text." }),
      el("button", { type: "submit", text: "Send response" }),
    );
    form.addEventListener("submit", (event) => answer(parseInput(field.value))(event));
    item.append(form);
    return item;
  }

  function parseInput(text) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  async function startRun() {
    const input = parseInput($("run-input").value);
    const { data } = await callJson("POST", `/workflows/${enc(state.workflow)}/runs`, { input, wait: true, timeoutSeconds: 10 });
    $("run-input").value = "";
    say(`Started run ${data.runId}: ${data.status}.`);
    await loadRunList(false);
    await openRun(data.runId);
  }

  // -- start -------------------------------------------------------------------------------------------------------

  function wire() {
    $("show-conversations").addEventListener("click", () => showView("conversations"));
    $("show-workflows").addEventListener("click", guard(async () => {
      showView("workflows");
      if (state.workflow && !$("run-list").children.length) await loadRunList(false);
    }));
    $("key-form").addEventListener("submit", guard(async () => {
      state.key = $("function-key").value;
      $("key-form").hidden = true;
      await start();
    }));
    $("agent").addEventListener("change", guard(async () => {
      state.agent = $("agent").value;
      state.conversation = null;
      $("conversation").hidden = true;
      await loadConversationList(false);
    }));
    $("open-form").addEventListener("submit", guard(async () => {
      const id = $("open-id").value.trim();
      if (id) await openConversation(id);
    }));
    $("more-conversations").addEventListener("click", guard(() => loadConversationList(true)));
    $("refresh-conversations").addEventListener("click", guard(() => loadConversationList(false)));
    $("show-excluded").addEventListener("change", () => {
      for (const node of document.querySelectorAll("#transcript .message.excluded")) {
        node.classList.toggle("hidden-excluded", !$("show-excluded").checked);
      }
    });
    $("chat-form").addEventListener("submit", guard(async () => {
      const text = $("message").value;
      if (!text.trim() || state.busy) return;
      $("message").value = "";
      await sendTurn({ message: text });
      $("message").focus();
    }));
    $("message").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $("chat-form").requestSubmit();
      }
    });
    $("retention-form").addEventListener("submit", guard(applyRetention));
    $("workflow").addEventListener("change", guard(async () => {
      state.workflow = $("workflow").value;
      state.run = null;
      $("run").hidden = true;
      await loadRunList(false);
    }));
    $("start-form").addEventListener("submit", guard(startRun));
    $("more-runs").addEventListener("click", guard(() => loadRunList(true)));
    $("refresh-runs").addEventListener("click", guard(() => loadRunList(false)));
    $("refresh-run").addEventListener("click", guard(() => openRun(state.run)));
  }

  async function start() {
    const { data } = await callJson("GET", "/inspector/app");
    state.agents = data.agents.map((agent) => agent.name);
    state.workflows = data.workflows.map((workflow) => workflow.name);
    $("agent").replaceChildren(...state.agents.map((name) => el("option", { value: name, text: name })));
    $("workflow").replaceChildren(...state.workflows.map((name) => el("option", { value: name, text: name })));
    $("no-workflows").hidden = state.workflows.length > 0;
    $("start-form").hidden = state.workflows.length === 0;
    const wanted = new URLSearchParams(location.hash.slice(1));
    state.agent = state.agents.includes(wanted.get("agent")) ? wanted.get("agent") : state.agents[0] || null;
    state.workflow = state.workflows.includes(wanted.get("workflow")) ? wanted.get("workflow") : state.workflows[0] || null;
    if (state.agent) $("agent").value = state.agent;
    if (state.workflow) $("workflow").value = state.workflow;
    await loadConversationList(false);
    if (wanted.get("conversation")) await openConversation(wanted.get("conversation"));
    if (wanted.get("run") && state.workflow) {
      showView("workflows");
      await loadRunList(false);
      await openRun(wanted.get("run"));
    }
    say(`Ready: ${state.agents.length} agent(s), ${state.workflows.length} workflow(s).`);
    document.body.dataset.ready = "true";
  }

  wire();
  guard(start)();
})();
