"""Take the README's screenshot of the explorer (figures/explorer.png) with Debian's headless Chromium.

    python scripts/explorer_screenshot.py [--out figures/explorer.png] [--figures DIR] [--trials 400] [--size 1024x768]

Starts ``simdesign explore`` on a free port, waits until the default setting (the paper's design under the
null, with the trials given) is computed and the second view is drawn, saves the screenshot, stops the server.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simdesign.explore.headless import start_chromium, stop_chromium  # noqa: E402


def wait_for(driver, script: str, timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while not driver.execute_script(script):
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out waiting for: {script}")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "figures" / "explorer.png"))
    parser.add_argument("--figures", help="folder of the precomputed curves (default: the repository's figures/)")
    parser.add_argument("--trials", default="400")
    parser.add_argument("--size", default="1024x768",
                        help="window WIDTHxHEIGHT in pixels (1024x768: a classroom projector)")
    args = parser.parse_args()
    command = [sys.executable, "-m", "simdesign.cli", "explore", "--port", "0"]
    if args.figures:
        command += ["--figures", args.figures]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    driver = None
    try:
        url = server.stdout.readline().split(" at ", 1)[1].split()[0]
        width, height = (int(part) for part in args.size.lower().split("x"))
        driver = start_chromium(window_size=(width, height), performance_log=False)
        driver.get(url)
        # the page fills its controls once the server's options arrive, and computes the defaults: wait for their
        # first results, or the trials typed below would be appended to the default value
        wait_for(driver, "return document.querySelectorAll('#results tbody tr').length > 0", 600)
        field = driver.find_element("id", "control-trials")
        field.clear()
        field.send_keys(args.trials)
        wait_for(driver, "return document.getElementById('status').dataset.status === 'done' && "
                         f"document.getElementById('results').dataset.trials === '{args.trials}'", 600)
        wait_for(driver, "const i = document.getElementById('position-picture'); return "
                         f"(i.complete && i.naturalWidth > 0 && i.dataset.trials === '{args.trials}') || "
                         "document.getElementById('position-message').textContent", 120)
        # show the controls from the top (typing scrolled the trials into view); leaving the field sends nothing
        driver.execute_script("document.activeElement.blur(); document.getElementById('controls').scrollTop = 0;")
        time.sleep(1.0)
        driver.save_screenshot(args.out)
        print(f"wrote {args.out}")
    finally:
        if driver is not None:
            stop_chromium(driver)
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
