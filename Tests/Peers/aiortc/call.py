"""aiortc as the offering WebRTC peer of a call (aiortc 1.16, in the venv tools/bootstrap makes).

Sends a sine tone of --tone Hz and a moving test picture of --size, sendrecv, over
127.0.0.1 only (aioice leaves loopback out of its host candidates; tests use loopback).
Prints the offer between "-----BEGIN OFFER-----" and "-----END OFFER-----" once gathered
(aiortc does not trickle), reads the answer from standard input up to
"-----END ANSWER-----", then runs for --seconds. What arrives is written to --wav (mono,
48 kHz, 16-bit) and counted. At the end it prints one line of JSON: the connection state,
the DTLS-SRTP profile, received audio samples, decoded video frames, the last frame's
size, and the frames sent. Exits 0 when the connection was established.
"""
import argparse
import asyncio
import json
import logging
import sys
import time
import wave

import aioice.ice
from aiortc import RTCPeerConnection, RTCSessionDescription
from signaling import print_offer, read_answer
from tracks import Picture, Tone, consume_audio, consume_video

aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tone", type=float, default=660)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--wav", required=True)
    parser.add_argument("--debug", action="store_true", help="aiortc's debug log on standard error")
    arguments = parser.parse_args()
    if arguments.debug:
        logging.basicConfig(level=logging.DEBUG)
    width, height = (int(value) for value in arguments.size.split("x"))

    connection = RTCPeerConnection()
    counts = {"audio_samples": 0, "video_frames": 0, "width": 0, "height": 0}
    consumers = []
    output = wave.open(arguments.wav, "wb")
    output.setnchannels(1)
    output.setsampwidth(2)
    output.setframerate(48_000)

    @connection.on("track")
    def on_track(track) -> None:
        if track.kind == "audio":
            consumers.append(asyncio.ensure_future(consume_audio(track, output, counts)))
        else:
            consumers.append(asyncio.ensure_future(consume_video(track, counts)))

    tone, picture = Tone(arguments.tone), Picture(width, height)
    connection.addTrack(tone)
    connection.addTrack(picture)
    established = False
    try:
        await connection.setLocalDescription(await connection.createOffer())
        print_offer(connection.localDescription.sdp)
        await connection.setRemoteDescription(RTCSessionDescription(sdp=read_answer(), type="answer"))
        deadline = time.monotonic() + arguments.seconds
        while time.monotonic() < deadline:
            established = established or connection.connectionState == "connected"
            await asyncio.sleep(0.1)
        transport = connection.getTransceivers()[0].sender.transport
        try:  # what OpenSSL agreed, e.g. SRTP_AEAD_AES_128_GCM (aiortc keeps no record of it)
            profile = transport._ssl.get_selected_srtp_profile().decode()
        except Exception:
            profile = None
        inbound = {}
        for stats in (await connection.getStats()).values():
            if stats.type == "inbound-rtp":
                inbound[stats.kind] = stats.packetsReceived
        print(json.dumps({
            "packets_received": inbound,
            "state": connection.connectionState, "established": established, "dtls": transport.state,
            "srtp_profile": profile, "tone_samples_sent": tone.sent, "frames_sent": picture.sent, **counts,
        }), flush=True)
        return 0 if established else 1
    finally:
        await connection.close()
        for consumer in consumers:
            consumer.cancel()
        output.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
