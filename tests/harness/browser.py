"""Headless Chromium from the system's packages, driven by Playwright for Python.

Playwright cannot download its own browsers here, so it launches Debian's /usr/bin/chromium.
unavailable() names what is missing so a test can skip with that reason.
"""

import shutil

CHROMIUM_NAMES = ("chromium", "chromium-browser")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path():
    return next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)


def unavailable():
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if chromium_path() is None:
        return "no chromium executable (apt-get install chromium)"
    return None


def launch(playwright):
    return playwright.chromium.launch(executable_path=chromium_path(), args=LAUNCH_ARGS)
