"""Media tracks the peer scripts send and take: a sine tone, a moving test picture, and
consumers that write what arrives to a WAV file and count decoded frames (no numpy)."""
import asyncio
import fractions
import math
import time
import wave
from array import array

from aiortc import MediaStreamTrack
from av import AudioFrame, AudioResampler, VideoFrame


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
        # The RTP timestamps (90 kHz) of the first and last pictures decoded: how many the
        # sender sent between them, at its frame rate.
        counts.setdefault("first_pts", frame.pts)
        counts["last_pts"] = frame.pts
