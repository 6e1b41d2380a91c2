"""aiortc as the offering WebRTC peer of a test (aiortc 1.16, in the venv tools/bootstrap makes).

Offers one audio and one video transceiver, sendrecv (or what --direction says), and
prints the offer between lines "-----BEGIN OFFER-----" and "-----END OFFER-----" once
aiortc has gathered its candidates (it does not trickle). Then it reads the answer from
standard input, up to a line "-----END ANSWER-----", applies it, and prints one line per
transceiver: "transceiver MID KIND DIRECTION CODEC", or "refused: REASON" when aiortc does
not take the answer. Exits 0 when it took it.
"""
import argparse
import asyncio
import sys

from signaling import print_offer, read_answer
from aiortc import RTCPeerConnection, RTCSessionDescription


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--direction", default="sendrecv", choices=["sendrecv", "sendonly", "recvonly"])
    arguments = parser.parse_args()
    connection = RTCPeerConnection()
    try:
        for kind in ("audio", "video"):
            connection.addTransceiver(kind, direction=arguments.direction)
        await connection.setLocalDescription(await connection.createOffer())
        print_offer(connection.localDescription.sdp)
        answer = read_answer()
        try:
            await connection.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
        except Exception as error:  # aiortc raises ValueError and others for an answer it will not take
            print(f"refused: {error}", flush=True)
            return 1
        for transceiver in connection.getTransceivers():
            codecs = transceiver._codecs  # what the answer negotiated, in order
            codec = codecs[0].mimeType if codecs else "-"
            print(f"transceiver {transceiver.mid} {transceiver.kind} {transceiver.currentDirection} {codec}", flush=True)
        return 0
    finally:
        await connection.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
