"""The test's side of signaling, shared by the peer scripts: the offer goes out on standard
output between marker lines, the answer comes back on standard input."""
import sys


def print_offer(sdp: str) -> None:
    """Prints `sdp` between "-----BEGIN OFFER-----" and "-----END OFFER-----"."""
    print("-----BEGIN OFFER-----")
    print(sdp.strip())
    print("-----END OFFER-----", flush=True)


def read_answer() -> str:
    """The SDP the test writes on standard input, up to a line "-----END ANSWER-----"."""
    lines = []
    for line in sys.stdin:
        if line.strip() == "-----END ANSWER-----":
            break
        lines.append(line.rstrip("\r\n"))
    return "\r\n".join(lines) + "\r\n"
