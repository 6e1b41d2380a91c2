// The web client's shared whiteboard: people in a real-time conference draw together
// (#board=NAME&token=TOKEN[&color=%23RRGGBB]). Loaded before client.js, whose `start` opens it.
//
// Everything drawn is an operation (a stroke, an undo, a clear), sent as real-time session
// data (one JSON object per message) to everyone in the conference over the data connection
// (`/rts`). Each operation carries a Lamport time (`at`) and its author, so every page
// orders the operations the same way whatever order they arrive in, and renders the same
// board. A stroke goes out in parts while it is drawn (at most one message per 50 ms, as
// NIM recommends), so others see it grow. When someone joins, every page sends the newcomer
// all the operations it knows; the newcomer drops the ones it has (by ID), so a late joiner
// sees the whole board as long as one page that saw it stays. The CLI (`mediaengine rts
// join NAME`) sees the same operations as lines of JSON.
"use strict";

// The board's own coordinates: every page draws in these, whatever size it shows them at.
const boardWidth = 1000;
const boardHeight = 700;
// Points per stroke part: a part stays far below the 50 KB a message may hold.
const pointsPerPart = 200;

// A device's data connection (`ws://HOST/rts`): text requests answered by ID, events, and
// binary data messages `| kind 1 | channel ID (8 bytes, big-endian) | peer length | peer | data |`
// (the peer is the target going out, empty for everyone, and the sender coming in). Sends
// are paced by the quota the login returns, so the server never refuses them.
class DataConnection {
  constructor(onData, onEvent, url = null) {
    this.onData = onData;
    this.queue = [];
    this.encoder = new TextEncoder();
    this.decoder = new TextDecoder();
    this.transport = new Signaling(onEvent, {
      path: "/rts",
      url,
      onBinary: (data) => this.received(data),
      onClose: (event) => {
        this.queue = [];
        onEvent("closed", { code: event.code, reason: event.reason });
      },
    });
  }

  received(data) {
    const bytes = new Uint8Array(data);
    if (bytes.length < 10 || bytes[0] !== 1 || bytes.length < 10 + bytes[9]) return;
    const channelID = new DataView(data).getBigUint64(1).toString();
    const peer = this.decoder.decode(bytes.subarray(10, 10 + bytes[9]));
    this.onData(channelID, peer, bytes.subarray(10 + bytes[9]));
  }

  async open(token, device) {
    await this.transport.open();
    const login = await this.transport.request("login", { token, device });
    this.quota = login.quota;
    // Half a second's worth to start with, as the server's own client does.
    this.bucket = { bytes: this.quota.bytesPerSecond / 2, messages: this.quota.messagesPerSecond / 2, updated: performance.now() };
    return login;
  }

  // Queues `text` for `to` (empty: everyone else in the channel); the queue drains at the quota.
  send(channelID, to, text) {
    const payload = this.encoder.encode(text);
    if (payload.length > this.quota.maximumMessageSize) throw new Error(`a message of ${payload.length} bytes is over the quota's ${this.quota.maximumMessageSize}`);
    const peer = this.encoder.encode(to);
    const frame = new Uint8Array(10 + peer.length + payload.length);
    frame[0] = 1;
    new DataView(frame.buffer).setBigUint64(1, BigInt(channelID));
    frame[9] = peer.length;
    frame.set(peer, 10);
    frame.set(payload, 10 + peer.length);
    this.queue.push(frame);
    this.drain();
  }

  drain() {
    if (this.waiting) return;
    while (this.queue.length > 0) {
      const now = performance.now();
      const elapsed = (now - this.bucket.updated) / 1000;
      this.bucket.updated = now;
      this.bucket.bytes = Math.min(this.quota.bytesPerSecond, this.bucket.bytes + elapsed * this.quota.bytesPerSecond);
      this.bucket.messages = Math.min(this.quota.messagesPerSecond, this.bucket.messages + elapsed * this.quota.messagesPerSecond);
      const frame = this.queue[0];
      if (this.bucket.bytes < frame.length || this.bucket.messages < 1) {
        const wait = Math.max((frame.length - this.bucket.bytes) / this.quota.bytesPerSecond, (1 - this.bucket.messages) / this.quota.messagesPerSecond);
        this.waiting = setTimeout(() => { this.waiting = undefined; this.drain(); }, Math.ceil(wait * 1000));
        return;
      }
      this.bucket.bytes -= frame.length;
      this.bucket.messages -= 1;
      this.queue.shift();
      if (this.transport.socket.readyState === WebSocket.OPEN) this.transport.socket.send(frame);
    }
  }

  close() {
    if (this.transport.socket) this.transport.socket.close();
  }
}

// An Error from an error reply's body, with its code (say, 417 for a name in use) and, for
// 421 (misdirected), the location to go to instead.
function requestError(body) {
  const error = new Error(`${body.message} (code ${body.code})`);
  error.code = body.code;
  error.location = body.location;
  return error;
}

// Orders operations: by Lamport time, then by author, then by ID.
function before(a, b) {
  if (a.at !== b.at) return a.at < b.at;
  if (a.author !== b.author) return a.author < b.author;
  return a.id < b.id;
}

class Whiteboard {
  constructor(name, token, color) {
    this.name = name;
    this.token = token;
    this.color = /^#[0-9a-fA-F]{6}$/.test(color || "") ? color.toLowerCase() : "#1f77b4";
    this.width = 6;
    this.clock = 0;
    this.counter = 0;
    this.seen = new Set();  // operation IDs (with their part) applied
    this.log = [];          // every operation applied, as it came (what a newcomer is sent)
    this.strokes = new Map(); // stroke ID -> {id, author, at, color, width, parts: Map(part -> points)}
    this.undone = new Set();
    this.lastClear = null;  // the latest clear operation
    this.members = new Set();
    this.own = [];          // this page's stroke IDs, newest last (what undo takes back)
    this.counts = { sent: 0, received: 0, replayed: 0, dropped: 0 };
    this.early = [];        // what came on the data connection before the join's reply, in order
    this.ready = new Promise((resolve, reject) => { this.joined = resolve; this.failed = reject; });
    this.ready.catch(() => {});
    this.signaling = new Signaling((type, body) => this.signalingEvent(type, body));
    this.data = this.dataConnection(null);
  }

  // A data connection to this page's server (`url` null) or to the cluster node at `url`;
  // its events count only while it is the board's.
  dataConnection(url) {
    const connection = new DataConnection((channelID, peer, payload) => this.received(channelID, peer, payload),
                                          (type, body) => { if (this.data === connection) this.dataEvent(type, body); }, url);
    return connection;
  }

  async join() {
    try {
      setStatus("connecting");
      await this.signaling.open();
      const login = await this.signaling.request("login", { token: this.token, device: "web" });
      this.account = login.account;
      await this.data.open(this.token, "web");
      // The first to arrive reserves the name; for everyone after, it is in use (417).
      await this.signaling.request("reserveConference", { name: this.name }).catch((error) => {
        if (error.code !== 417) throw error;
      });
      let reply;
      try {
        reply = await this.signaling.request("joinConference", { name: this.name });
      } catch (error) {
        // Another node of the cluster hosts the board: the data connection goes there.
        if (error.code !== 421 || !error.location) throw error;
        const local = this.data;
        this.data = this.dataConnection(error.location);
        local.close();
        await this.data.open(this.token, "web");
        reply = await this.signaling.request("joinConference", { name: this.name });
      }
      this.channelID = String(reply.channelID);
      for (const late of this.early.splice(0)) late();
      for (const member of reply.members) this.members.add(member);
      this.show();
      this.showStatus();
      this.joined();
    } catch (error) {
      this.failed(error);
      throw error;
    }
  }

  // MARK: Drawing here

  // The board's coordinates of a pointer event.
  point(event) {
    const rect = this.canvas.getBoundingClientRect();
    return [Math.round((event.clientX - rect.left) * boardWidth / rect.width),
            Math.round((event.clientY - rect.top) * boardHeight / rect.height)];
  }

  show() {
    document.getElementById("board").hidden = false;
    this.canvas = document.getElementById("canvas");
    this.canvas.width = boardWidth;
    this.canvas.height = boardHeight;
    this.context = this.canvas.getContext("2d", { willReadFrequently: true });
    this.render();
    const colour = document.getElementById("colour");
    colour.value = this.color;
    colour.addEventListener("input", () => { this.color = colour.value; });
    document.getElementById("undo").addEventListener("click", () => this.undo());
    document.getElementById("clear").addEventListener("click", () => this.clear());
    this.canvas.addEventListener("pointerdown", (event) => {
      this.canvas.setPointerCapture(event.pointerId);
      this.begin(this.color);
      this.extend(this.point(event));
    });
    this.canvas.addEventListener("pointermove", (event) => { if (this.drawing) this.extend(this.point(event)); });
    const end = () => { if (this.drawing) this.finish(); };
    this.canvas.addEventListener("pointerup", end);
    this.canvas.addEventListener("pointercancel", end);
  }

  // Starts a stroke of this page's.
  begin(color) {
    this.clock += 1;
    this.counter += 1;
    this.drawing = { id: `${this.account}/${this.counter}`, at: this.clock, color, part: 0, points: [], last: null };
    this.own.push(this.drawing.id);
  }

  extend([x, y]) {
    const drawing = this.drawing;
    drawing.points.push(Math.max(0, Math.min(boardWidth, x)), Math.max(0, Math.min(boardHeight, y)));
    if (drawing.points.length >= 2 * pointsPerPart) this.flush();
    else if (!drawing.timer) drawing.timer = setTimeout(() => { drawing.timer = undefined; this.flush(drawing); }, 50);
  }

  // Sends what was drawn since the last part (each part starts at the previous one's end, so
  // the parts join up).
  flush(drawing = this.drawing) {
    if (!drawing || drawing.points.length === 0) return;
    const points = drawing.last ? drawing.last.concat(drawing.points) : drawing.points;
    drawing.last = drawing.points.slice(-2);
    drawing.points = [];
    this.publish({ t: "stroke", id: drawing.id, part: drawing.part, at: drawing.at, author: this.account, color: drawing.color,
                   width: this.width, points });
    drawing.part += 1;
  }

  finish() {
    clearTimeout(this.drawing.timer);
    this.flush();
    this.drawing = undefined;
  }

  // Takes back this page's latest stroke still on the board.
  undo() {
    const target = [...this.own].reverse().find((id) => !this.undone.has(id) && this.visible(this.strokes.get(id)));
    if (!target) return null;
    this.clock += 1;
    this.counter += 1;
    this.publish({ t: "undo", id: `${this.account}/${this.counter}`, at: this.clock, author: this.account, target });
    return target;
  }

  clear() {
    this.clock += 1;
    this.counter += 1;
    this.publish({ t: "clear", id: `${this.account}/${this.counter}`, at: this.clock, author: this.account });
  }

  publish(operation) {
    this.apply(operation);
    this.data.send(this.channelID, "", JSON.stringify(operation));
    this.counts.sent += 1;
  }

  // MARK: What arrives

  received(channelID, peer, payload) {
    if (this.channelID === undefined) {
      // Before the join's reply: the others answer the join on this (data) connection, which
      // can overtake the reply on the signaling one. Kept (boundedly) until the reply names
      // the channel.
      if (this.early.length < 10_000) this.early.push(() => this.received(channelID, peer, payload));
      return;
    }
    if (channelID !== this.channelID) return;
    let message;
    try {
      message = JSON.parse(this.data.decoder.decode(payload));
    } catch {
      this.counts.dropped += 1;
      return;
    }
    const operations = message && message.t === "replay" && Array.isArray(message.operations) ? message.operations : [message];
    for (const operation of operations) {
      if (this.valid(operation)) {
        this.apply(operation);
        this.counts.received += 1;
      } else {
        this.counts.dropped += 1;
      }
    }
  }

  // Whether `operation` is one this board draws (anything else, from a CLI member say, is
  // counted and left).
  valid(operation) {
    if (!operation || typeof operation.id !== "string" || typeof operation.author !== "string" || !Number.isInteger(operation.at)) return false;
    switch (operation.t) {
      case "stroke":
        return Number.isInteger(operation.part) && operation.part >= 0 && /^#[0-9a-fA-F]{6}$/.test(operation.color)
          && Number.isFinite(operation.width) && operation.width > 0 && operation.width <= 100
          && Array.isArray(operation.points) && operation.points.length >= 2 && operation.points.length % 2 === 0
          && operation.points.every(Number.isFinite);
      case "undo":
        return typeof operation.target === "string";
      case "clear":
        return true;
      default:
        return false;
    }
  }

  apply(operation) {
    const key = operation.t === "stroke" ? `${operation.id}#${operation.part}` : operation.id;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.log.push(operation);
    this.clock = Math.max(this.clock, operation.at);
    switch (operation.t) {
      case "stroke": {
        let stroke = this.strokes.get(operation.id);
        if (!stroke) {
          stroke = { id: operation.id, author: operation.author, at: operation.at, color: operation.color, width: operation.width, parts: new Map() };
          this.strokes.set(operation.id, stroke);
        }
        stroke.parts.set(operation.part, operation.points);
        break;
      }
      case "undo":
        this.undone.add(operation.target);
        break;
      case "clear":
        if (!this.lastClear || before(this.lastClear, operation)) this.lastClear = operation;
        break;
    }
    this.scheduleRender();
  }

  // Whether a stroke shows: not taken back, and not older than the latest clear.
  visible(stroke) {
    return stroke && !this.undone.has(stroke.id) && (!this.lastClear || before(this.lastClear, stroke));
  }

  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = true;
    setTimeout(() => { this.renderPending = false; this.render(); }, 0);
  }

  // Draws the board again from its operations, in their order.
  render() {
    if (!this.context) return;
    const context = this.context;
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, boardWidth, boardHeight);
    context.lineCap = "round";
    context.lineJoin = "round";
    const strokes = [...this.strokes.values()].filter((stroke) => this.visible(stroke)).sort((a, b) => (before(a, b) ? -1 : 1));
    for (const stroke of strokes) {
      context.strokeStyle = stroke.color;
      context.fillStyle = stroke.color;
      context.lineWidth = stroke.width;
      for (const part of [...stroke.parts.keys()].sort((a, b) => a - b)) {
        const points = stroke.parts.get(part);
        if (points.length === 2) {
          context.beginPath();
          context.arc(points[0], points[1], stroke.width / 2, 0, 2 * Math.PI);
          context.fill();
          continue;
        }
        context.beginPath();
        context.moveTo(points[0], points[1]);
        for (let index = 2; index < points.length; index += 2) context.lineTo(points[index], points[index + 1]);
        context.stroke();
      }
    }
  }

  // MARK: Members

  dataEvent(type, body) {
    if (this.channelID === undefined && (type === "rtsUserJoined" || type === "rtsUserLeft")) {
      if (this.early.length < 10_000) this.early.push(() => this.dataEvent(type, body));
      return;
    }
    switch (type) {
      case "rtsUserJoined":
        if (String(body.channelID) !== this.channelID) return;
        this.members.add(body.account);
        this.replay(body.account);
        this.showStatus();
        break;
      case "rtsUserLeft":
        if (String(body.channelID) !== this.channelID) return;
        this.members.delete(body.account);
        this.showStatus();
        break;
      case "rtsLeftConference":
        if (String(body.channelID) === this.channelID) setStatus(`left ${this.name}: ${body.message}`);
        break;
      case "closed":
        setStatus(`the data connection closed${body.reason ? `: ${body.reason}` : ""}`);
        break;
    }
  }

  // Sends a newcomer every operation this page knows, in messages far below the size limit.
  replay(account) {
    let batch = [];
    let size = 0;
    const send = () => {
      if (batch.length === 0) return;
      this.data.send(this.channelID, account, JSON.stringify({ t: "replay", operations: batch }));
      this.counts.replayed += batch.length;
      batch = [];
      size = 0;
    };
    for (const operation of this.log) {
      const length = JSON.stringify(operation).length;
      if (size + length > 32_000) send();
      batch.push(operation);
      size += length + 1;
    }
    send();
  }

  signalingEvent(type) {
    if (type === "kickout") setStatus("logged in elsewhere");
  }

  showStatus() {
    setStatus(`board ${this.name} as ${this.account}, with ${[...this.members].sort().join(", ") || "nobody else yet"}`);
  }

  leave() {
    if (this.channelID !== undefined) this.signaling.request("leaveConference", { channelID: Number(this.channelID) }).catch(() => {});
    this.data.close();
  }

  // MARK: For automation (tests drive the page through these)

  // Draws a stroke through `points` ([[x, y], ...] in board coordinates) in `color`.
  draw(points, color = this.color) {
    this.begin(color);
    for (const point of points) this.extend(point);
    this.finish();
    return this.own[this.own.length - 1];
  }

  // The colour at (x, y) as "#rrggbb".
  ink(x, y) {
    const [r, g, b] = this.context.getImageData(x, y, 1, 1).data;
    return `#${[r, g, b].map((value) => value.toString(16).padStart(2, "0")).join("")}`;
  }

  // Resolves to true once `check()` holds, or false after `timeout` milliseconds.
  until(check, timeout = 10_000) {
    const deadline = performance.now() + timeout;
    return new Promise((resolve) => {
      const poll = () => {
        let held = false;
        try { held = Boolean(check()); } catch { held = false; }
        if (held || performance.now() > deadline) resolve(held);
        else setTimeout(poll, 50);
      };
      poll();
    });
  }

  stats() {
    const shown = [...this.strokes.values()].filter((stroke) => this.visible(stroke)).length;
    return { account: this.account, members: [...this.members].sort(), strokes: this.strokes.size, shown, operations: this.log.length,
             ...this.counts };
  }
}
