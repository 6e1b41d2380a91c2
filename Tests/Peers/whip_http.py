"""The HTTP side of WHIP and WHEP (RFC 9725) for the peer scripts (aiortc's and GStreamer's):
one request with a bearer token, standard library only."""
import urllib.error
import urllib.request


def http(method: str, url: str, token: str, body: bytes = b"") -> tuple:
    """(status, headers, body text) of one request; refusals are answers too."""
    request = urllib.request.Request(url, data=body if method == "POST" else None, method=method)
    request.add_header("Authorization", "Bearer " + token)
    if method == "POST":
        request.add_header("Content-Type", "application/sdp")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()
