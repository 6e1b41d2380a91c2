// MediaEngine's web client: plain JavaScript, no build step, nothing fetched from elsewhere.
// Modes, from the URL's fragment (never sent to the server, so tokens stay out of its logs):
//   #meeting=NAME&token=TOKEN[&role=audience][&audio=0|&video=0][&processing=0]
//                                        join a meeting over the signaling WebSocket: publish
//                                        camera and microphone (an actor) or only watch (audience)
//   #call=ACCOUNT&token=TOKEN[&processing=0]
//                                        call an account (our clients answer the page's offer)
//   #answer&token=TOKEN                  wait for a WebRTC caller (another page) and answer it
//   #watch=MEETING/ACCOUNT&token=TOKEN   view one meeting participant over WHEP
//   #board=NAME&token=TOKEN[&color=%23RRGGBB]
//                                        draw with others on a shared whiteboard: a real-time
//                                        conference's data (board.js)
// For automation, window.mediaEngine.stats() resolves to per-participant figures
// (framesDecoded, frameWidth, frameHeight, audioLevel, packetsLost, jitter), what this page
// sent (framesSent, and per simulcast layer by RID: framesSent, frameWidth, active), and the
// transport's dtlsState, srtpCipher and selected candidate pair type; firstFrameAfter is the
// seconds from opening the page to the first picture; mute(account, {audio, video}) stops
// (or, with false, resumes) that participant's media for this page only.
// On a whiteboard, stats().board counts strokes, operations and members, and
// window.mediaEngine.board is the board itself (draw, undo, clear, ink, until: board.js).
"use strict";

const sessions = [];

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

// The tile showing `name` (made on first use). Only others' pictures count for
// firstFrameAfter, not this page's own camera.
function tile(name, { own = false } = {}) {
  let element = document.querySelector(`.tile[data-name="${CSS.escape(name)}"]`);
  if (!element) {
    element = document.createElement("div");
    element.className = "tile";
    element.dataset.name = name;
    const video = document.createElement("video");
    video.autoplay = true;
    video.playsInline = true;
    // Seconds from opening the page to the first picture shown, for measurements.
    video.addEventListener("loadeddata", () => {
      if (!own && window.mediaEngine.firstFrameAfter === undefined) window.mediaEngine.firstFrameAfter = performance.now() / 1000;
    });
    const label = document.createElement("div");
    label.className = "name";
    label.textContent = name;
    const state = document.createElement("span");
    state.className = "state";
    label.append(" ", state);
    element.append(video, label);
    document.getElementById("tiles").append(element);
  }
  return element.querySelector("video");
}

// Resolves once ICE gathering completes (WHIP/WHEP take one offer with every candidate),
// or after two seconds with what was gathered.
function gathered(connection) {
  if (connection.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { if (connection.iceGatheringState === "complete") resolve(); };
    connection.addEventListener("icegatheringstatechange", done);
    setTimeout(resolve, 2000);
  });
}

// A WebSocket of the server's that speaks the signaling envelope: requests answered by
// their ID ("ok" or "error"), events to `onEvent`. The signaling connection is `/`; the
// whiteboard's data connection (`/rts`) is one too, its binary messages to `onBinary`; `url`,
// when given, is a whole URL to connect to instead (another node of a cluster).
class Signaling {
  constructor(onEvent, { path = "/", url = null, onBinary = null, onClose = null } = {}) {
    this.onEvent = onEvent;
    this.path = path;
    this.url = url;
    this.onBinary = onBinary;
    this.onClose = onClose;
    this.pending = new Map();
    this.nextID = 1;
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    this.socket = new WebSocket(this.url || `${scheme}://${location.host}${this.path}`);
    this.socket.binaryType = "arraybuffer";
    this.socket.onmessage = (message) => {
      if (typeof message.data !== "string") {
        if (this.onBinary) this.onBinary(message.data);
        return;
      }
      const envelope = JSON.parse(message.data);
      const waiting = envelope.id != null && this.pending.get(envelope.id);
      if (waiting) {
        this.pending.delete(envelope.id);
        if (envelope.type === "error") waiting.reject(requestError(envelope.body));
        else waiting.resolve(envelope.body);
      } else if (envelope.id == null) {
        this.onEvent(envelope.type, envelope.body);
      }
    };
    this.socket.onclose = (event) => {
      for (const waiting of this.pending.values()) waiting.reject(new Error(`the connection to ${this.url || this.path} closed`));
      this.pending.clear();
      if (this.onClose) this.onClose(event);
      else setStatus("signaling connection closed");
    };
    return new Promise((resolve, reject) => {
      this.socket.onopen = resolve;
      this.socket.onerror = () => reject(new Error(`the connection to ${this.url || this.path} failed`));
    });
  }

  request(type, body) {
    const id = this.nextID++;
    this.socket.send(JSON.stringify({ v: 1, id, type, body }));
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }
}

// One meeting over one RTCPeerConnection: this page's camera and microphone go up in two
// send-only sections; each other actor comes down in a receive-only pair that the server
// fills (its answer says which mid carries whom). Whenever the meeting changes (someone
// joins, leaves or changes role) the page offers again, adding pairs when it has too few.
class Meeting {
  constructor(name, token, role, publish) {
    this.name = name;
    this.token = token;
    this.role = role;
    this.publish = publish;
    this.participants = new Map(); // account -> participant (role, type)
    this.receiving = {}; // mid -> account
    this.muted = new Map(); // account -> {audio, video} muted for this page
    this.levels = {};
    this.queue = Promise.resolve();
    this.signaling = new Signaling((type, body) => this.event(type, body));
  }

  participantOf(mid) { return this.receiving[mid]; }

  static get initialPairs() { return 3; }

  // Simulcast, as SFU clients publish: the camera at full size and at a half and a quarter,
  // each its own encoding with a RID, lowest first (the server counts layers in this order),
  // so each viewer gets the one its bandwidth and its tile fit. Chrome encodes 3 layers from
  // 960x540 up and 2 from 640x360 (WebRTC-LegacySimulcastLayerLimit), dropping the last ones
  // listed; so only those are listed, and a smaller camera sends one stream.
  static simulcastEncodings(track) {
    const { width = 0, height = 0 } = track.getSettings();
    const count = width * height >= 960 * 540 ? 3 : width * height >= 640 * 360 ? 2 : 1;
    if (count < 2) return null;
    return ["q", "h", "f"].slice(3 - count).map((rid, index) => ({ rid, scaleResolutionDownBy: 2 ** (count - 1 - index) }));
  }

  // The server's wish for this page's simulcast layers (lowest first): those no viewer can
  // use are paused, and resumed (with a keyframe) when one can. Applied again after each
  // negotiation, which would otherwise set them from the answer.
  async applyLayers() {
    if (!this.videoSender || !this.activeLayers) return;
    const parameters = this.videoSender.getParameters();
    if (!parameters.encodings || parameters.encodings.length < 2) return;
    let changed = false;
    parameters.encodings.forEach((encoding, index) => {
      const active = this.activeLayers[index] !== false;
      if (encoding.active !== active) { encoding.active = active; changed = true; }
    });
    if (changed) await this.videoSender.setParameters(parameters).catch((error) => console.warn(`layers: ${error.message}`));
  }

  // Tells the server the size each participant's tile shows (device pixels), half a second
  // after it settles, so the server sends the smallest simulcast layer that fills it.
  watchSize(account, video) {
    if (!this.resizes) {
      this.shownSizes = new Map(); // account -> "WxH" last told
      this.resizeTimers = new Map();
      this.resizes = new ResizeObserver((entries) => {
        for (const entry of entries) {
          const name = entry.target.parentElement && entry.target.parentElement.dataset.name;
          if (!name) continue;
          const width = Math.round(entry.contentRect.width * devicePixelRatio);
          const height = Math.round(entry.contentRect.height * devicePixelRatio);
          clearTimeout(this.resizeTimers.get(name));
          this.resizeTimers.set(name, setTimeout(() => this.tellSize(name, width, height), 500));
        }
      });
    }
    if (video.dataset.sized) return;
    video.dataset.sized = "1";
    this.resizes.observe(video);
  }

  tellSize(account, width, height) {
    const participant = this.participants.get(account);
    if (this.left || this.callID === undefined || !participant || participant.type !== 2) return;
    const size = `${width}x${height}`;
    if (this.shownSizes.get(account) === size) return;
    this.shownSizes.set(account, size);
    this.signaling.request("setVideoSize", { callID: this.callID, user: account, width, height })
      .catch((error) => console.warn(`setVideoSize: ${error.message}`));
  }

  async join() {
    // The server's media port is ICE-lite with host candidates in every answer: of the
    // servers a login hands out only TURN is of use here. A STUN entry names that same
    // port, and Chrome takes whatever comes from a STUN server's address for STUN server
    // responses: the answers to its checks would be dropped.
    [this.account, this.connection] = await connect(this.signaling, this.token, { turnOnly: true });
    this.connection.onconnectionstatechange = () => this.showStatus();
    let type = 1; // CallType: 1 audio, 2 video
    if (this.role === "actor") {
      const stream = await capture(this.publish);
      for (const track of stream.getTracks()) {
        const init = { direction: "sendonly", streams: [stream] };
        const encodings = track.kind === "video" && Meeting.simulcastEncodings(track);
        if (encodings) init.sendEncodings = encodings;
        const transceiver = this.connection.addTransceiver(track, init);
        if (track.kind === "video") {
          type = 2;
          this.videoSender = transceiver.sender;
          // Under CPU load Chrome would shrink the picture; a meeting keeps its size and
          // lowers the frame rate instead.
          const parameters = transceiver.sender.getParameters();
          parameters.degradationPreference = "maintain-resolution";
          await transceiver.sender.setParameters(parameters).catch(() => {});
        }
      }
      const own = tile(`${this.account} (you)`, { own: true });
      own.muted = true;
      own.srcObject = stream;
    }
    // Receiving pairs for up to three others in the first offer: joining a small meeting
    // then needs no second round of negotiation before the first picture.
    for (let pair = 0; pair < Meeting.initialPairs; pair += 1) {
      this.connection.addTransceiver("audio", { direction: "recvonly" });
      this.connection.addTransceiver("video", { direction: "recvonly" });
    }
    const offer = await this.connection.createOffer();
    await this.connection.setLocalDescription(offer);
    setStatus(`joining ${this.name} as ${this.account}`);
    const reply = await this.signaling.request("joinMeeting", { name: this.name, role: this.role, type, videoQuality: "default",
                                                                sdp: this.connection.localDescription.sdp });
    this.callID = reply.callID;
    await this.connection.setRemoteDescription({ type: "answer", sdp: reply.sdp });
    await this.applyLayers();
    this.place(reply.receiving);
    sessions.push(this);
    for (const participant of reply.participants) this.participants.set(participant.account, participant);
    this.showStatus();
    this.renegotiate();
  }

  // Offers again (one negotiation at a time), with a receive-only pair per other actor.
  renegotiate() {
    this.queue = this.queue.then(async () => {
      if (this.left) return;
      const actors = [...this.participants.values()].filter((participant) => participant.role === "actor").map((actor) => actor.account);
      const placed = new Set(Object.values(this.receiving));
      if (placed.size === actors.length && actors.every((account) => placed.has(account))) return;
      for (const kind of ["audio", "video"]) {
        const receivers = this.connection.getTransceivers().filter((transceiver) =>
          transceiver.direction === "recvonly" && transceiver.receiver.track.kind === kind).length;
        for (let added = receivers; added < actors.length; added += 1) this.connection.addTransceiver(kind, { direction: "recvonly" });
      }
      await this.connection.setLocalDescription(await this.connection.createOffer());
      const reply = await this.signaling.request("renegotiateMeeting", { callID: this.callID, sdp: this.connection.localDescription.sdp });
      await this.connection.setRemoteDescription({ type: "answer", sdp: reply.sdp });
      await this.applyLayers();
      this.place(reply.receiving);
    }).catch((error) => fail(error));
  }

  // Puts each receiving section's track in its participant's tile.
  place(receiving) {
    this.receiving = receiving || {};
    const streams = new Map();
    for (const transceiver of this.connection.getTransceivers()) {
      const account = transceiver.mid != null && this.receiving[transceiver.mid];
      if (!account) continue;
      if (!streams.has(account)) streams.set(account, []);
      streams.get(account).push(transceiver.receiver.track);
    }
    for (const [account, tracks] of streams) {
      const video = tile(account);
      this.watchSize(account, video);
      const current = video.srcObject ? video.srcObject.getTracks() : [];
      if (current.length !== tracks.length || tracks.some((track) => !current.includes(track))) {
        video.srcObject = new MediaStream(tracks);
        video.play().catch(() => {});
      }
    }
    for (const element of document.querySelectorAll(".tile")) {
      const name = element.dataset.name;
      if (!name.endsWith("(you)") && !streams.has(name)) element.remove();
    }
    this.showStates();
  }

  event(type, body) {
    switch (type) {
      case "userJoined":
        this.participants.set(body.participant.account, body.participant);
        this.renegotiate();
        break;
      case "userLeft":
        this.participants.delete(body.account);
        this.muted.delete(body.account);
        this.renegotiate();
        break;
      case "meetingRoleChanged": {
        const participant = this.participants.get(body.account);
        if (participant) participant.role = body.role;
        this.renegotiate();
        break;
      }
      case "videoLayers":
        this.activeLayers = body.active || null;
        this.queue = this.queue.then(() => this.applyLayers());
        break;
      case "speakingUsers":
        this.levels = body.levels || {};
        this.showStates();
        break;
      case "meetingError":
        setStatus(`meeting ended: ${body.message}`);
        break;
    }
  }

  // Mute-for-me: the server stops (or resumes) forwarding that participant to this page.
  async mute(account, { audio, video } = {}) {
    const body = { callID: this.callID, user: account };
    if (audio !== undefined) body.audio = audio;
    if (video !== undefined) body.video = video;
    await this.signaling.request("setMeetingMute", body);
    const muted = this.muted.get(account) || { audio: false, video: false };
    if (audio !== undefined) muted.audio = audio;
    if (video !== undefined) muted.video = video;
    this.muted.set(account, muted);
    this.showStates();
  }

  // Each tile's state: the participant's role, what this page muted, whether it speaks,
  // and its net status from this page's receive statistics.
  async showStates() {
    const figures = (await stats()).participants;
    for (const [account, participant] of this.participants) {
      const element = document.querySelector(`.tile[data-name="${CSS.escape(account)}"] .state`);
      if (!element) continue;
      const muted = this.muted.get(account) || {};
      const parts = [participant.role];
      if (muted.audio) parts.push("audio muted for me");
      if (muted.video) parts.push("video muted for me");
      if ((this.levels[account] || 0) > 0.05) parts.push("speaking");
      const figure = figures[account] || {};
      const lost = (figure.packetsLost || 0) + (figure.videoPacketsLost || 0);
      parts.push(lost > 50 || (figure.jitter || 0) > 0.05 ? "net: poor" : "net: good");
      element.textContent = `(${parts.join(", ")})`;
    }
  }

  showStatus() {
    setStatus(`in ${this.name} as ${this.account}: ${this.connection.connectionState}, ${this.participants.size} other(s)`);
  }

  leave() {
    this.left = true;
    if (this.callID !== undefined) this.signaling.request("leaveMeeting", { callID: this.callID }).catch(() => {});
    this.connection.close();
  }
}

function fail(error) {
  setStatus(`failed: ${error.message}`);
  console.error(`mediaengine: ${error.message}`);
}

let meeting;
let call;
let board;

async function mute(account, muted) {
  if (!meeting) throw new Error("not in a meeting");
  await meeting.mute(account, muted);
}

// Opens the signaling connection and logs in; returns the account and a peer connection
// (one BUNDLE transport) with the login's ICE servers, or only its TURN ones.
async function connect(signaling, token, { turnOnly }) {
  setStatus("connecting");
  await signaling.open();
  const login = await signaling.request("login", { token, device: "web" });
  const iceServers = (login.iceServers || []).filter((server) => !turnOnly || server.urls.some((url) => url.startsWith("turn")))
    .map((server) => ({ urls: server.urls, username: server.username, credential: server.credential }));
  return [login.account, new RTCPeerConnection({ iceServers, bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" })];
}

// The page's camera and microphone. Echo cancellation, noise suppression and gain control
// stay on for a microphone near speakers; `processing=0` turns them off (a studio
// microphone, or a test's steady tone, which noise suppression takes for noise).
async function capture(publish) {
  if (!navigator.mediaDevices) {
    throw new Error("camera and microphone need a secure origin: open this page over https or on localhost, or join as audience");
  }
  const audio = publish.audio && (publish.processing ? true
    : { echoCancellation: false, noiseSuppression: false, autoGainControl: false });
  return navigator.mediaDevices.getUserMedia({ audio, video: publish.video });
}

// A candidate our clients trickle ({host, port, type, priority, foundation}) as a browser
// takes it.
function iceCandidate(candidate, mid) {
  const type = candidate.type || "host";
  return new RTCIceCandidate({ sdpMid: mid, candidate:
    `candidate:${candidate.foundation || "1"} 1 udp ${candidate.priority || 1} ${candidate.host} ${candidate.port} typ ${type}` +
    (type === "host" ? "" : " raddr 0.0.0.0 rport 0") });
}

// A P2P call with one account: this page offers (#call=ACCOUNT) or answers a WebRTC
// caller's offer (#answer). Audio and video go both ways over one BUNDLE transport keyed by
// DTLS-SRTP; our clients answer with their candidates and trickle the rest.
class Call {
  constructor(token, publish) {
    this.token = token;
    this.publish = publish;
    this.signaling = new Signaling((type, body) => this.event(type, body));
  }

  participantOf() { return this.peer; }

  async open() {
    // The peer is another address: STUN helps find this page's public one.
    [this.account, this.connection] = await connect(this.signaling, this.token, { turnOnly: false });
    this.connection.onconnectionstatechange = () => setStatus(`call with ${this.peer || "?"}: ${this.connection.connectionState}`);
    this.connection.ontrack = (event) => {
      const video = tile(this.peer);
      const stream = video.srcObject || new MediaStream();
      stream.addTrack(event.track);
      video.srcObject = stream;
      video.play().catch(() => {});
    };
    sessions.push(this);
  }

  async addCapture() {
    const stream = await capture(this.publish);
    for (const track of stream.getTracks()) this.connection.addTrack(track, stream);
    const own = tile(`${this.account} (you)`, { own: true });
    own.muted = true;
    own.srcObject = stream;
  }

  async place(callee) {
    await this.open();
    this.peer = callee;
    await this.addCapture();
    await this.connection.setLocalDescription(await this.connection.createOffer());
    await gathered(this.connection);
    setStatus(`calling ${callee}`);
    const reply = await this.signaling.request("start", { callee, type: this.publish.video ? 2 : 1,
                                                          option: { videoQuality: "default", disableCropping: false },
                                                          sdp: this.connection.localDescription.sdp });
    this.callID = reply.callID;
  }

  async wait() {
    await this.open();
    setStatus(`${this.account}: waiting for a call`);
  }

  async answer(invitation) {
    this.peer = invitation.from;
    this.callID = invitation.callID;
    if (!invitation.sdp) {
      // Our clients offer SDES endpoints, which a browser cannot take.
      await this.signaling.request("response", { callID: invitation.callID, accept: false });
      setStatus(`declined ${invitation.from}: it is not a WebRTC caller`);
      return;
    }
    await this.connection.setRemoteDescription({ type: "offer", sdp: invitation.sdp });
    await this.addCapture();
    await this.connection.setLocalDescription(await this.connection.createAnswer());
    await gathered(this.connection);
    await this.signaling.request("response", { callID: invitation.callID, accept: true, sdp: this.connection.localDescription.sdp });
  }

  event(type, body) {
    switch (type) {
      case "receive":
        if (this.callID === undefined) this.answer(body).catch(fail);
        break;
      case "response":
        if (body.accepted && body.sdp) {
          this.connection.setRemoteDescription({ type: "answer", sdp: body.sdp }).catch(fail);
        } else if (!body.accepted) {
          setStatus(`${body.from} declined`);
        }
        break;
      case "candidates": {
        const mid = this.connection.getTransceivers()[0]?.mid || "0";
        for (const candidate of body.candidates || []) {
          // One our client cannot be reached at is skipped (the others may do).
          this.connection.addIceCandidate(iceCandidate(candidate, mid)).catch(() => {});
        }
        break;
      }
      case "hangup":
        setStatus(`call ended by ${body.by || "the server"}`);
        this.connection.close();
        break;
      case "callRecord":
        window.mediaEngine.callRecord = body.record;
        break;
    }
  }

  leave() {
    if (this.callID !== undefined) this.signaling.request("hangup", { callID: this.callID }).catch(() => {});
    if (this.connection) this.connection.close();
  }
}

async function watch(target, token) {
  const [meeting, account] = target.split("/");
  if (!meeting || !account) throw new Error("watch needs MEETING/ACCOUNT");
  const connection = new RTCPeerConnection();
  const stream = new MediaStream();
  connection.addTransceiver("audio", { direction: "recvonly" });
  connection.addTransceiver("video", { direction: "recvonly" });
  connection.ontrack = (event) => {
    stream.addTrack(event.track);
    const video = tile(account);
    video.srcObject = stream;
    video.play().catch(() => {});
  };
  await connection.setLocalDescription(await connection.createOffer());
  await gathered(connection);
  setStatus(`asking to watch ${account} in ${meeting}`);
  const response = await fetch(`/whep/${encodeURIComponent(meeting)}/${encodeURIComponent(account)}`, {
    method: "POST",
    headers: { "Content-Type": "application/sdp", "Authorization": `Bearer ${token}` },
    body: connection.localDescription.sdp,
  });
  const body = await response.text();
  if (response.status !== 201) throw new Error(`${response.status}: ${body.trim()}`);
  const location = response.headers.get("Location");
  await connection.setRemoteDescription({ type: "answer", sdp: body });
  sessions.push({ connection, participantOf: () => account, location, token });
  connection.onconnectionstatechange = () => setStatus(`watching ${account}: ${connection.connectionState}`);
}

async function stats() {
  const participants = {};
  const sent = {};
  let transport = {};
  for (const session of sessions) {
    const report = await session.connection.getStats();
    const byID = new Map();
    report.forEach((entry) => byID.set(entry.id, entry));
    report.forEach((entry) => {
      if (entry.type === "inbound-rtp") {
        const name = session.participantOf(entry.mid);
        if (!name) return;
        const figures = participants[name] || (participants[name] = {});
        if (entry.kind === "video") {
          Object.assign(figures, { framesDecoded: entry.framesDecoded || 0, frameWidth: entry.frameWidth || 0,
                                   frameHeight: entry.frameHeight || 0, videoPacketsLost: entry.packetsLost || 0,
                                   videoJitter: entry.jitter || 0, videoPacketsReceived: entry.packetsReceived || 0,
                                   // Loss recovery: RTX packets taken (only with an RTX stream, whose SSRC
                                   // Chrome names), NACKs and keyframe requests sent, and freezes.
                                   retransmittedPacketsReceived: entry.retransmittedPacketsReceived,
                                   rtxSsrc: entry.rtxSsrc, nackCount: entry.nackCount || 0, pliCount: entry.pliCount || 0,
                                   framesReceived: entry.framesReceived || 0, framesDropped: entry.framesDropped || 0,
                                   freezeCount: entry.freezeCount || 0, totalFreezesDuration: entry.totalFreezesDuration || 0 });
        } else {
          Object.assign(figures, { audioLevel: entry.audioLevel || 0, packetsLost: entry.packetsLost || 0, jitter: entry.jitter || 0,
                                   totalSamplesReceived: entry.totalSamplesReceived || 0,
                                   audioPacketsReceived: entry.packetsReceived || 0 });
        }
      } else if (entry.type === "outbound-rtp" && entry.kind === "video") {
        // What this page sent of its camera, for comparing with what others decoded (of
        // simulcast layers, the one that sent most: each carries the same pictures).
        sent.framesSent = Math.max(sent.framesSent || 0, entry.framesSent || 0);
        // Simulcast: each layer's figures by RID (lowest first as listed).
        if (entry.rid) {
          (sent.layers || (sent.layers = {}))[entry.rid] = { framesSent: entry.framesSent || 0, frameWidth: entry.frameWidth || 0,
                                                            frameHeight: entry.frameHeight || 0, active: entry.active !== false,
                                                            targetBitrate: entry.targetBitrate || 0,
                                                            qualityLimitationReason: entry.qualityLimitationReason };
        }
      } else if (entry.type === "remote-inbound-rtp" && entry.kind === "video") {
        // The server's receiver reports about this page's camera: the round trips they
        // measured (W3C roundTripTimeMeasurements; remote-inbound-rtp has no report count).
        sent.roundTripTimeMeasurements = (sent.roundTripTimeMeasurements || 0) + (entry.roundTripTimeMeasurements || 0);
        sent.roundTripTime = entry.roundTripTime;
      } else if (entry.type === "transport") {
        const pair = byID.get(entry.selectedCandidatePairId);
        const remote = pair && byID.get(pair.remoteCandidateId);
        transport = { dtlsState: entry.dtlsState, srtpCipher: entry.srtpCipher, dtlsCipher: entry.dtlsCipher,
                      candidateType: remote ? remote.candidateType : null,
                      availableOutgoingBitrate: pair ? pair.availableOutgoingBitrate : null,
                      packetsReceived: entry.packetsReceived, bytesReceived: entry.bytesReceived };
      }
    });
  }
  const figures = Object.assign({ participants, sent }, transport);
  if (board) figures.board = board.stats();
  return figures;
}

window.mediaEngine = { stats, mute, get board() { return board; } };

// A closed tab ends its sessions (the server would time the legs out anyway).
window.addEventListener("pagehide", () => {
  if (meeting) meeting.leave();
  if (call) call.leave();
  if (board) board.leave();
  for (const session of sessions) {
    if (session.location) {
      fetch(session.location, { method: "DELETE", keepalive: true, headers: { "Authorization": `Bearer ${session.token}` } });
    }
  }
});

async function start(parameters) {
  const token = parameters.get("token");
  try {
    if (parameters.has("meeting") && token) {
      const role = parameters.get("role") === "audience" ? "audience" : "actor";
      meeting = new Meeting(parameters.get("meeting"), token, role,
                            { audio: parameters.get("audio") !== "0", video: parameters.get("video") !== "0",
                              processing: parameters.get("processing") !== "0" });
      await meeting.join();
    } else if ((parameters.has("call") || parameters.has("answer")) && token) {
      call = new Call(token, { audio: parameters.get("audio") !== "0", video: parameters.get("video") !== "0",
                               processing: parameters.get("processing") !== "0" });
      if (parameters.has("call")) await call.place(parameters.get("call"));
      else await call.wait();
    } else if (parameters.has("watch") && token) {
      await watch(parameters.get("watch"), token);
    } else if (parameters.has("board") && token) {
      board = new Whiteboard(parameters.get("board"), token, parameters.get("color"));
      await board.join();
    } else {
      document.getElementById("start").hidden = false;
    }
  } catch (error) {
    fail(error);
  }
}

document.getElementById("start").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  event.target.hidden = true;
  const parameters = new URLSearchParams({ token: form.get("token") });
  for (const name of ["meeting", "watch", "role", "call", "board"]) {
    if (form.get(name)) parameters.set(name, form.get(name));
  }
  start(parameters);
});

start(new URLSearchParams(location.hash.slice(1)));
