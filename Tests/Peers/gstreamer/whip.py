"""GStreamer's webrtcbin (1.22, Debian's, through python3-gi) as a WHIP publisher or a WHEP
viewer of a meeting (RFC 9725). Run with the system's python3 (/usr/bin/python3).

  whip.py publish --url http://HOST:PORT/whip/MEETING --token-file F [--tone 440] [--size 320x240]
  whip.py view    --url http://HOST:PORT/whep/MEETING/ACCOUNT --token-file F [--pcm OUT.s16]

The token is read from a file (never on the command line). The
offer is POSTed once gathering is complete, the answer applied, media runs for --seconds,
then the session is DELETEd at its Location. Prints one line of JSON: the POST's status
and Location, the connection state, and what arrived (decoded frames, their size and RTP
timestamps, audio samples written to --pcm as 48 kHz mono S16LE). A refused POST prints
its status and the server's reason and exits 2.
"""
import argparse
import json
import os
import sys
import time
from urllib.parse import urljoin

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from whip_http import http  # noqa: E402

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402


class Peer:
    def __init__(self, arguments, token: str):
        self.arguments, self.token = arguments, token
        self.loop = GLib.MainLoop()
        self.report = {"mode": arguments.mode, "video_frames": 0, "width": 0, "height": 0, "audio_samples": 0}
        self.location = None
        self.started = time.monotonic()
        self.exit_code = 1
        width, height = (int(value) for value in arguments.size.split("x"))
        if arguments.mode == "publish":
            description = (
                "webrtcbin name=w bundle-policy=max-bundle "
                f"audiotestsrc is-live=true wave=sine freq={arguments.tone} volume=0.3 ! audioconvert ! audioresample ! "
                "audio/x-raw,rate=48000,channels=1 ! opusenc ! rtpopuspay pt=111 ! "
                "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! w. "
                f"videotestsrc is-live=true pattern=ball ! video/x-raw,width={width},height={height},framerate=30/1 ! "
                "vp8enc deadline=1 keyframe-max-dist=60 target-bitrate=300000 ! identity name=sent ! rtpvp8pay pt=96 picture-id-mode=15-bit ! "
                "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000 ! w. ")
            self.pipeline = Gst.parse_launch(description)
            self.webrtc = self.pipeline.get_by_name("w")
            self.report["frames_sent"] = 0
            self.pipeline.get_by_name("sent").connect("handoff", self.on_sent)
        else:
            self.pipeline = Gst.Pipeline.new("viewer")
            self.webrtc = Gst.ElementFactory.make("webrtcbin", "w")
            self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
            self.pipeline.add(self.webrtc)
            for caps in ("application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000",
                         "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000"):
                self.webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY, Gst.Caps.from_string(caps))
            self.webrtc.connect("pad-added", self.on_pad)
        self.webrtc.connect("on-negotiation-needed", self.on_negotiation_needed)
        self.webrtc.connect("notify::ice-gathering-state", self.on_gathering)
        self.offer_sent = False

    def on_negotiation_needed(self, _element) -> None:
        if self.arguments.mode == "publish":
            for index in range(2):
                transceiver = self.webrtc.emit("get-transceiver", index)
                if transceiver is not None:
                    transceiver.set_property("direction", GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        promise = Gst.Promise.new_with_change_func(self.on_offer, None)
        self.webrtc.emit("create-offer", None, promise)

    def on_offer(self, promise, _data) -> None:
        reply = promise.get_reply()
        offer = reply.get_value("offer") if reply is not None and reply.has_field("offer") else None
        if offer is None:
            self.report["error"] = "webrtcbin made no offer: " + (reply.to_string() if reply is not None else "no reply")
            GLib.idle_add(self.loop.quit)
            return
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def on_gathering(self, _element, _spec) -> None:
        if self.webrtc.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE and not self.offer_sent:
            self.offer_sent = True
            GLib.idle_add(self.post)

    def post(self) -> bool:
        sdp = self.webrtc.get_property("local-description").sdp.as_text()
        status, headers, body = http("POST", self.arguments.url, self.token, sdp.encode())
        self.report.update(status=status, location=headers.get("Location"), links=headers.get_all("Link") or [])
        if status != 201:
            self.report["reason"] = body.strip()
            self.exit_code = 2
            self.loop.quit()
            return False
        self.location = urljoin(self.arguments.url, headers.get("Location") or "")
        _, message = GstSdp.SDPMessage.new_from_text(body)
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, message)
        self.webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        GLib.timeout_add(int(self.arguments.seconds * 1000), self.finish)
        return False

    def on_pad(self, _element, pad) -> None:
        if pad.direction != Gst.PadDirection.SRC:
            return
        caps = pad.get_current_caps() or pad.query_caps(None)
        media = caps.get_structure(0).get_string("media")
        if media == "video":
            chain = Gst.parse_bin_from_description(
                "rtpvp8depay ! vp8dec ! videoconvert ! appsink name=pictures emit-signals=true sync=false", True)
            chain.get_by_name("pictures").connect("new-sample", self.on_picture)
        else:
            location = self.arguments.pcm or "/dev/null"
            chain = Gst.parse_bin_from_description(
                "rtpopusdepay ! opusdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=48000,channels=1 ! "
                f"identity name=counter ! filesink location={location}", True)
            chain.get_by_name("counter").connect("handoff", self.on_audio)
        self.pipeline.add(chain)
        chain.sync_state_with_parent()
        pad.link(chain.get_static_pad("sink"))

    def on_picture(self, sink) -> Gst.FlowReturn:
        sample = sink.emit("pull-sample")
        structure = sample.get_caps().get_structure(0)
        self.report["video_frames"] += 1
        self.report["width"], self.report["height"] = structure.get_value("width"), structure.get_value("height")
        if "first_frame_after" not in self.report:
            self.report["first_frame_after"] = round(time.monotonic() - self.started, 3)
        # Presentation times in 90 kHz ticks: how many pictures the sender sent between the
        # first and last decoded, at its frame rate.
        pts = sample.get_buffer().pts
        if pts != Gst.CLOCK_TIME_NONE:
            self.report.setdefault("first_pts", pts * 90_000 // Gst.SECOND)
            self.report["last_pts"] = pts * 90_000 // Gst.SECOND
        return Gst.FlowReturn.OK

    def on_sent(self, _identity, _buffer) -> None:
        if self.location is not None:  # frames sent while the session exists
            self.report["frames_sent"] += 1

    def on_audio(self, _identity, buffer) -> None:
        self.report["audio_samples"] += buffer.get_size() // 2

    def finish(self) -> bool:
        state = self.webrtc.get_property("ice-connection-state")
        self.report["ice_state"] = state.value_nick
        self.report["established"] = state in (GstWebRTC.WebRTCICEConnectionState.CONNECTED, GstWebRTC.WebRTCICEConnectionState.COMPLETED)
        status, _, _ = http("DELETE", self.location, self.token)
        self.report["delete_status"] = status
        self.exit_code = 0 if self.report["established"] else 1
        self.loop.quit()
        return False

    def run(self) -> int:
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message::error", self.on_error)
        self.pipeline.set_state(Gst.State.PLAYING)
        GLib.timeout_add(int((self.arguments.seconds + 20) * 1000), self.loop.quit)
        self.loop.run()
        self.pipeline.set_state(Gst.State.NULL)
        print(json.dumps(self.report), flush=True)
        return self.exit_code

    def on_error(self, _bus, message) -> None:
        error, _ = message.parse_error()
        self.report["error"] = str(error)
        self.loop.quit()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["publish", "view"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--tone", type=float, default=440)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--pcm", help="what a viewer hears: 48 kHz mono S16LE")
    arguments = parser.parse_args()
    with open(arguments.token_file) as file:
        token = file.read().strip()
    Gst.init(None)
    return Peer(arguments, token).run()


if __name__ == "__main__":
    sys.exit(main())
