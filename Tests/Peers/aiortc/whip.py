"""aiortc as a WHIP publisher or a WHEP viewer (RFC 9725) of a meeting (aiortc 1.16).

  whip.py publish --url http://HOST:PORT/whip/MEETING --token-file F [--tone 440] [--size 320x240]
  whip.py view    --url http://HOST:PORT/whep/MEETING/ACCOUNT --token-file F [--wav OUT.wav]

The token is read from a file (never on the command line). The offer is POSTed as
application/sdp once gathered (127.0.0.1 only), the answer applied, media runs for
--seconds once connected, then the session is DELETEd at its Location (or abandoned: --abandon). Prints one line of JSON: the
POST's status and Location, the ICE server Link headers, the connection state, what was
sent, and what arrived (audio samples, decoded frames and their size). A refused POST
prints its status and the server's reason and exits 2.
"""
import argparse
import asyncio
import json
import logging
import os
import sys
import time
import wave
from urllib.parse import urljoin

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from whip_http import http  # noqa: E402

import aioice.ice
from aiortc import RTCPeerConnection, RTCSessionDescription
from tracks import Picture, Tone, consume_audio, consume_video

aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["publish", "view"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--tone", type=float, default=440)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--wav", help="what a viewer hears (mono, 48 kHz)")
    parser.add_argument("--abandon", action="store_true", help="end without DELETE, as a closed browser tab does")
    parser.add_argument("--debug", action="store_true")
    arguments = parser.parse_args()
    if arguments.debug:
        logging.basicConfig(level=logging.DEBUG)
    with open(arguments.token_file) as file:
        token = file.read().strip()
    width, height = (int(value) for value in arguments.size.split("x"))

    connection = RTCPeerConnection()
    counts = {"audio_samples": 0, "video_frames": 0, "width": 0, "height": 0}
    consumers = []
    output = None
    if arguments.wav:
        output = wave.open(arguments.wav, "wb")
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(48_000)
    sink = output or wave.open("/dev/null", "wb")
    if sink is not output:
        sink.setnchannels(1)
        sink.setsampwidth(2)
        sink.setframerate(48_000)

    @connection.on("track")
    def on_track(track) -> None:
        if track.kind == "audio":
            consumers.append(asyncio.ensure_future(consume_audio(track, sink, counts)))
        else:
            consumers.append(asyncio.ensure_future(consume_video(track, counts)))

    tone = picture = None
    if arguments.mode == "publish":
        tone, picture = Tone(arguments.tone), Picture(width, height)
        connection.addTransceiver(tone, direction="sendonly")
        connection.addTransceiver(picture, direction="sendonly")
    else:
        connection.addTransceiver("audio", direction="recvonly")
        connection.addTransceiver("video", direction="recvonly")
    report = {"mode": arguments.mode}
    established = False
    try:
        await connection.setLocalDescription(await connection.createOffer())
        started = time.monotonic()
        status, headers, body = await asyncio.get_running_loop().run_in_executor(
            None, http, "POST", arguments.url, token, connection.localDescription.sdp.encode())
        report.update(status=status, location=headers.get("Location"), links=headers.get_all("Link") or [])
        if status != 201:
            report["reason"] = body.strip()
            print(json.dumps(report), flush=True)
            return 2
        await connection.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
        # --seconds of media, counted from the connection (ICE and DTLS may take a second or
        # two on a busy machine: counted from the answer, a short run could carry almost
        # nothing); at most 15 s to connect.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if not established and connection.connectionState == "connected":
                established = True
                report["connected_after"] = round(time.monotonic() - started, 3)
                deadline = time.monotonic() + arguments.seconds
            if counts["video_frames"] and "first_frame_after" not in report:
                report["first_frame_after"] = round(time.monotonic() - started, 3)
            await asyncio.sleep(0.02)
        stats = {}
        for entry in (await connection.getStats()).values():
            if entry.type in ("inbound-rtp", "outbound-rtp"):
                stats[entry.type + "-" + entry.kind] = entry.packetsReceived if entry.type == "inbound-rtp" else entry.packetsSent
        location = urljoin(arguments.url, report["location"] or "")
        delete_status = None
        if not arguments.abandon:
            delete_status, _, _ = await asyncio.get_running_loop().run_in_executor(None, http, "DELETE", location, token)
        report.update(established=established, state=connection.connectionState, packets=stats, delete_status=delete_status,
                      tone_samples_sent=tone.sent if tone else 0, frames_sent=picture.sent if picture else 0, **counts)
        print(json.dumps(report), flush=True)
        if arguments.abandon:
            os._exit(0 if established else 1)  # no DTLS close, no DELETE: gone, as a closed tab
        return 0 if established else 1
    finally:
        await connection.close()
        for consumer in consumers:
            consumer.cancel()
        sink.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
