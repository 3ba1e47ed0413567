"""A real browser for the page `ragcli serve` serves: Debian's chromium driven by Selenium through
/usr/bin/chromedriver (the driver path given: Selenium Manager never downloads anything), headless,
one session for every browser test (starting chromium takes seconds).

Without chromium, chromedriver or selenium the browser tests fail when `CI` is set (.ci/run installs
them and sets it): they must not pass there without having run. On a developer's machine they are
skipped, with the reason, so the rest of the suite stays usable.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("RAGCLI_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RAGCLI_CHROMEDRIVER", "/usr/bin/chromedriver")
INSTALL = "apt-get install -y chromium chromium-driver && pip install selenium"


def _missing() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            return f"{path} is not there"
    return ""


def no_browser(reason: str) -> None:
    words = f"NO BROWSER, the browser tests did not run: {reason} ({INSTALL})"
    if os.environ.get("CI"):
        pytest.fail(words, pytrace=False)
    pytest.skip(words)


@pytest.fixture(scope="session")
def browser():
    """One headless chromium for the session; its performance log records every request it makes."""
    missing = _missing()
    if missing:
        no_browser(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start is a missing browser
        no_browser(f"chromium did not start: {str(exc).splitlines()[0]}")
    driver.requested = []  # every URL the browser asked for, across tests (see requests())
    yield driver
    driver.quit()


def requests(driver) -> list[str]:
    """The URLs the browser requested since the last call (and before, in driver.requested)."""
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            request = message["params"]["request"]
            driver.requested.append(f'{request["method"]} {request["url"]}')
    return driver.requested
