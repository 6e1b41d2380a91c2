"""Headless Chromium driven over the DevTools protocol, for tests (run with the peers venv's
python, which has websocket-client).

  page.py --seconds 8 [--fake-audio X.wav] [--fake-video X.y4m] [--port N] [--action SECONDS:EXPRESSION ...] < URL

The URL comes on standard input (it may hold a token in its fragment: never on a command
line). Chromium starts with a profile of its own in a temporary directory, fake media
devices, and DevTools on 127.0.0.1 (the namespace's own, when run in one; --port 0 picks a free
port, for several pages on one host); the page is
opened with Page.navigate. Every second the page's `window.mediaEngine.stats()` is read;
at the end one line of JSON: the samples (seconds since navigation, stats), the console's
errors, and the time to the first decoded frame. An --action's expression is evaluated in
the page once SECONDS have passed (say, a mute-for-me). Chromium is killed at the end.
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import websocket


class DevTools:
    def __init__(self, url: str):
        self.socket = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            return {"exception": result["exceptionDetails"].get("text")}
        return result.get("result", {}).get("value")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--fake-audio")
    parser.add_argument("--fake-video")
    # DevTools' port; 0: one the system picks (several pages on one host), read back from
    # the profile's DevToolsActivePort file.
    parser.add_argument("--port", type=int, default=9222)
    parser.add_argument("--action", action="append", default=[])
    arguments = parser.parse_args()
    url = sys.stdin.readline().strip()
    # Camera and microphone are for secure origins only: the lab's server is plain HTTP on
    # a non-loopback address (Chromium pairs no loopback candidates), so its origin is
    # declared secure, as an operator's HTTPS front would make it.
    origin = urllib.parse.urlsplit(url)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
               "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
               "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
               "--no-first-run", "--no-default-browser-check",
               f"--unsafely-treat-insecure-origin-as-secure={origin.scheme}://{origin.netloc}",
               f"--remote-debugging-port={arguments.port}", "--remote-debugging-address=127.0.0.1", "about:blank"]
    if arguments.fake_audio:
        command.append(f"--use-file-for-fake-audio-capture={arguments.fake_audio}")
    if arguments.fake_video:
        command.append(f"--use-file-for-fake-video-capture={arguments.fake_video}")
    def die_with_driver() -> None:
        # PR_SET_PDEATHSIG: if this driver is killed (a test cut short), Chromium dies too.
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)

    browser = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=die_with_driver)
    report = {"samples": [], "console": []}
    try:
        deadline = time.monotonic() + 30
        port = arguments.port
        while port == 0 and time.monotonic() < deadline:
            try:
                with open(os.path.join(profile, "DevToolsActivePort")) as active:
                    port = int(active.readline().strip() or 0)
            except (OSError, ValueError):
                pass
            if port == 0:
                time.sleep(0.1)
        pages = []
        while time.monotonic() < deadline and not pages:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as response:
                    pages = [page for page in json.load(response) if page.get("type") == "page"]
            except OSError:
                time.sleep(0.2)
        if not pages:
            report["error"] = "Chromium opened no page for DevTools"
            return 2
        tools = DevTools(pages[0]["webSocketDebuggerUrl"])
        tools.call("Runtime.enable")
        started = time.monotonic()
        tools.call("Page.navigate", url=url)
        end = started + arguments.seconds
        actions = sorted((float(at), expression) for at, expression in (action.split(":", 1) for action in arguments.action))
        report["actions"] = []
        while time.monotonic() < end:
            time.sleep(1)
            while actions and time.monotonic() - started >= actions[0][0]:
                _, expression = actions.pop(0)
                result = tools.evaluate(expression)
                report["actions"].append({"at": round(time.monotonic() - started, 3),
                                          "result": result if isinstance(result, str) else json.dumps(result)})
            stats = tools.evaluate("window.mediaEngine ? window.mediaEngine.stats() : null")
            report["samples"].append({"at": round(time.monotonic() - started, 3), "stats": stats})
        report["status"] = tools.evaluate("document.getElementById('status') && document.getElementById('status').textContent")
        report["first_frame_after"] = tools.evaluate("window.mediaEngine && window.mediaEngine.firstFrameAfter")
        for event in tools.events:
            if event.get("method") == "Runtime.consoleAPICalled" and event["params"].get("type") in ("error", "warning"):
                report["console"].append(" ".join(str(arg.get("value")) for arg in event["params"].get("args", [])))
            elif event.get("method") == "Runtime.exceptionThrown":
                report["console"].append(event["params"]["exceptionDetails"].get("text"))
        return 0
    finally:
        print(json.dumps(report), flush=True)
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
