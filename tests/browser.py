"""A real headless Chromium driven through Selenium and Debian's chromedriver, for the browser tests (the inspector's,
the AG-UI sample's), and the few ways they find and wait for what a page shows.

Without the browser the tests skip, except under CI (`CI=true`), where they fail: `.ci/run` installs it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
WAIT_SECONDS = 30
# Chromium's own connections (updates, sync, field trials) are refused on a closed network and would only slow it.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def require_browser() -> tuple[str, str]:
    """The paths of chromium and chromedriver, or a skip (a failure under CI) naming what is missing."""
    chromium = shutil.which("chromium")
    chromedriver = shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chromium), ("chromium-driver", chromedriver)) if path is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (requirements-dev.txt)")
    if missing:
        message = f"the browser tests need {', '.join(missing)}: apt-get install -y chromium chromium-driver"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    assert chromium is not None and chromedriver is not None
    return chromium, chromedriver


def start_browser(width: int = 1280, height: int = 1000, flags: tuple[str, ...] = ()) -> Iterator[Any]:
    """A headless Chromium with a fresh profile (and more command-line `flags`); quit afterwards."""
    chromium, chromedriver = require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="tests-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, *flags, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str, *, full_page: bool = True) -> Path:
    """Save the page as tests/artifacts/<name>.png (the whole page's height when `full_page`)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.execute_script("window.scrollTo(0, 0)")
    if full_page:
        size = driver.get_window_size()
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], min(max(height, size["height"]), 6000))
        driver.save_screenshot(str(path))
        driver.set_window_size(size["width"], size["height"])
    else:
        driver.save_screenshot(str(path))
    return path


def wait(driver: Any, condition: Any, seconds: float = WAIT_SECONDS) -> Any:
    """What `condition(driver)` returns once it is truthy; a timeout fails the test."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # A page may render a part again by replacing its elements: an element found a moment ago may be replaced
    # before it is read, which means "not yet", as a missing element does.
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def by_id(driver: Any, element_id: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id)


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)
