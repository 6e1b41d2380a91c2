// MediaEngine's web client: plain JavaScript, no build step, nothing fetched from elsewhere.
// Modes, from the URL's fragment (never sent to the server, so tokens stay out of its logs):
//   #watch=MEETING/ACCOUNT&token=TOKEN   view one meeting participant over WHEP
// For automation, window.mediaEngine.stats() resolves to per-participant figures
// (framesDecoded, frameWidth, frameHeight, audioLevel, packetsLost, jitter) and the
// transport's dtlsState, srtpCipher and selected candidate pair type; firstFrameAfter is the
// seconds from opening the page to the first picture.
"use strict";

const sessions = [];

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

function tile(name) {
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
      if (window.mediaEngine.firstFrameAfter === undefined) window.mediaEngine.firstFrameAfter = performance.now() / 1000;
    });
    const label = document.createElement("div");
    label.className = "name";
    label.textContent = name;
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
  sessions.push({ connection, participants: [account], location, token });
  connection.onconnectionstatechange = () => setStatus(`watching ${account}: ${connection.connectionState}`);
}

async function stats() {
  const participants = {};
  let transport = {};
  for (const session of sessions) {
    const report = await session.connection.getStats();
    const byID = new Map();
    report.forEach((entry) => byID.set(entry.id, entry));
    report.forEach((entry) => {
      if (entry.type === "inbound-rtp") {
        const name = session.participants[0];
        const figures = participants[name] || (participants[name] = {});
        if (entry.kind === "video") {
          Object.assign(figures, { framesDecoded: entry.framesDecoded || 0, frameWidth: entry.frameWidth || 0,
                                   frameHeight: entry.frameHeight || 0, videoPacketsLost: entry.packetsLost || 0,
                                   videoJitter: entry.jitter || 0 });
        } else {
          Object.assign(figures, { audioLevel: entry.audioLevel || 0, packetsLost: entry.packetsLost || 0, jitter: entry.jitter || 0,
                                   totalSamplesReceived: entry.totalSamplesReceived || 0 });
        }
      } else if (entry.type === "transport") {
        const pair = byID.get(entry.selectedCandidatePairId);
        const remote = pair && byID.get(pair.remoteCandidateId);
        transport = { dtlsState: entry.dtlsState, srtpCipher: entry.srtpCipher, dtlsCipher: entry.dtlsCipher,
                      candidateType: remote ? remote.candidateType : null };
      }
    });
  }
  return Object.assign({ participants }, transport);
}

window.mediaEngine = { stats };

// A closed tab ends its sessions (the server would time the legs out anyway).
window.addEventListener("pagehide", () => {
  for (const session of sessions) {
    if (session.location) {
      fetch(session.location, { method: "DELETE", keepalive: true, headers: { "Authorization": `Bearer ${session.token}` } });
    }
  }
});

async function start(parameters) {
  const token = parameters.get("token");
  try {
    if (parameters.has("watch") && token) {
      await watch(parameters.get("watch"), token);
    } else {
      document.getElementById("start").hidden = false;
    }
  } catch (error) {
    setStatus(`failed: ${error.message}`);
    console.error(`mediaengine: ${error.message}`);
  }
}

document.getElementById("start").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  event.target.hidden = true;
  start(new URLSearchParams({ token: form.get("token"), watch: form.get("watch") }));
});

start(new URLSearchParams(location.hash.slice(1)));
