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
import fractions
import json
import logging
import math
import sys
import time
import wave

import aioice.ice
from array import array
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from signaling import print_offer, read_answer
from av import AudioFrame, AudioResampler, VideoFrame

aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]


class Tone(MediaStreamTrack):
    kind = "audio"

    def __init__(self, frequency: float):
        super().__init__()
        # One second of the tone at 0.3 of full scale (a whole number of cycles for whole Hz).
        self.second = array("h", (int(0.3 * 32767 * math.sin(2 * math.pi * frequency * n / 48_000)) for n in range(48_000)))
        self.sent = 0
        self.started = None

    async def recv(self) -> AudioFrame:
        if self.started is None:
            self.started = time.monotonic()
        due = self.started + self.sent / 48_000
        await asyncio.sleep(max(0, due - time.monotonic()))
        offset = self.sent % 48_000
        frame = AudioFrame(format="s16", layout="mono", samples=960)
        frame.planes[0].update(self.second[offset:offset + 960].tobytes())
        frame.sample_rate = 48_000
        frame.pts = self.sent
        frame.time_base = fractions.Fraction(1, 48_000)
        self.sent += 960
        return frame


class Picture(MediaStreamTrack):
    kind = "video"

    def __init__(self, width: int, height: int):
        super().__init__()
        self.width, self.height = width, height
        self.sent = 0
        self.started = None

    async def recv(self) -> VideoFrame:
        if self.started is None:
            self.started = time.monotonic()
        due = self.started + self.sent / 30
        await asyncio.sleep(max(0, due - time.monotonic()))
        frame = VideoFrame(width=self.width, height=self.height, format="yuv420p")
        # A horizontal luma ramp with a bright bar moving right, grey chroma.
        luma, chroma = frame.planes[0], frame.planes[1:]
        bar = (self.sent * 4) % self.width
        row = bytearray(int(16 + 200 * x / max(1, self.width - 1)) for x in range(self.width))
        row[bar:bar + 8] = b"\xeb" * len(row[bar:bar + 8])
        row += bytes(luma.line_size - self.width)
        luma.update(bytes(row) * self.height)
        for plane in chroma:
            plane.update(b"\x80" * plane.buffer_size)
        frame.pts = self.sent * 3_000
        frame.time_base = fractions.Fraction(1, 90_000)
        self.sent += 1
        return frame


async def consume_audio(track, output: wave.Wave_write, counts: dict) -> None:
    resampler = AudioResampler(format="s16", layout="mono", rate=48_000)
    while True:
        try:
            frame = await track.recv()
        except Exception:  # the track ended (MediaStreamError)
            return
        for converted in resampler.resample(frame):
            data = bytes(converted.planes[0])[:2 * converted.samples]
            output.writeframes(data)
            counts["audio_samples"] += len(data) // 2


async def consume_video(track, counts: dict) -> None:
    while True:
        try:
            frame = await track.recv()
        except Exception:
            return
        counts["video_frames"] += 1
        counts["width"], counts["height"] = frame.width, frame.height


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
