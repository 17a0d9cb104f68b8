#!/usr/bin/env python3
"""The attention explorer (GET /) in headless Chromium, driven by Selenium (docs/serve.md).

Starts `nazar serve` on a free loopback port (two tiny models trained here, or the --model
arguments given), loads the page at 1280x800, types a sentence and presses Ctrl+Enter, waits
for the translation, then for every target token: hovers it and checks that the highlighted
source tokens are exactly those with the largest weights in the server's JSON for the same
request (>= 0.5 x the row's largest, as the page documents); the reverse for source tokens; in
the hard view the highlighted source token is the alignment's; a token focused from the keyboard
highlights too; two models side by side give two panels; the page has no horizontal overflow at
phone width (390 px); the browser console has no errors. Screenshots go to OUTDIR.

Usage: test_browser.py path/to/nazar OUTDIR [--model NAME=FILE ...] [--text SENTENCE]
Exit 77 (skipped) when chromium, chromedriver or python3-selenium is missing."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

HIGHLIGHT = 0.5  # nazar/serve/www/app.js

ap = argparse.ArgumentParser()
ap.add_argument("nazar")
ap.add_argument("outdir")
ap.add_argument("--model", action="append", default=[])
ap.add_argument("--text", default="b c d e f")
ap.add_argument("--beam", default="5")
args = ap.parse_args()

chrome = shutil.which("chromium") or shutil.which("chromium-browser")
driver_bin = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:
    webdriver = None
if not chrome or not driver_bin or webdriver is None:
    print("skipped: the browser test needs chromium, chromium-driver and python3-selenium "
          "(scripts/install-deps.sh test installs them)")
    sys.exit(77)

failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else ": " + str(detail)[:1500]))
    if not cond:
        failures.append(what)


def wait_until(fn, what, limit_s=60):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
        except Exception:  # the page is still changing
            pass
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def expected(weights, hard=None):
    if hard is not None:
        return set(hard)
    top = max(weights) if weights else 0
    return {i for i, w in enumerate(weights) if top > 0 and w >= HIGHLIGHT * top}


def highlighted(panel, cls):
    return {int(e.get_attribute("data-" + ("i" if cls == "src" else "j")))
            for e in panel.find_elements(By.CSS_SELECTOR, "th.%s.hl" % cls)}


def set_viewport(driver, width, height):
    """The page's viewport (not the window, which adds the browser's own frame) to width x height."""
    driver.set_window_size(width, height)
    dw, dh = driver.execute_script("return [window.outerWidth - window.innerWidth, "
                                   "window.outerHeight - window.innerHeight]")
    if dw or dh:
        driver.set_window_size(width + dw, height + dh)


def run(driver, server, model_names):
    os.makedirs(args.outdir, exist_ok=True)
    set_viewport(driver, 1280, 800)
    driver.get("http://127.0.0.1:%d/" % server.port)
    wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#model option")) ==
               len(model_names), "the model list")
    box = driver.find_element(By.ID, "text")
    box.click()
    box.send_keys(args.text)
    box.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard shortcut submits
    panel = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, ".panel"), "the translation")

    # The same request straight to the API: what the page must highlight.
    beam = int(args.beam)
    status, _, res = server.translate({"text": [args.text], "model": model_names[0], "beam": beam,
                                       "n_best": min(3, beam), "attention": True,
                                       "alignment": "hard"})
    check(status == 200, "the API answers the page's request", res)
    t = res["translations"][0]
    best = t["hypotheses"][0]
    shown = panel.find_element(By.CSS_SELECTOR, ".best").text
    check(shown == (best["text"] or "(empty)"), "the page shows the translation", (shown, best))
    nbest = panel.find_elements(By.CSS_SELECTOR, ".nbest li")
    check(len(nbest) == len(t["hypotheses"]) or len(t["hypotheses"]) == 1,
          "the page lists the n-best hypotheses", len(nbest))
    actions = ActionChains(driver)
    check_hover(driver, actions, panel, t, best)
    check_hard_view(driver, actions, best)
    check_compare(driver, actions, model_names)
    check_phone_and_errors(driver)


def check_hover(driver, actions, panel, t, best):
    """Hovering (or focusing) a token of the heatmap highlights the tokens its weights point to."""
    att = best["attention"]
    srcs = panel.find_elements(By.CSS_SELECTOR, "th.src")
    tgts = panel.find_elements(By.CSS_SELECTOR, "th.tgt")
    check([e.text for e in srcs] == t["source_tokens"] and len(tgts) == len(att),
          "heatmap: a column per source token, a row per target token (+ </s>)",
          ([e.text for e in srcs], len(tgts)))

    ok, bad = True, []
    for j, th in enumerate(tgts):
        actions.move_to_element(th).perform()
        got, want = highlighted(panel, "src"), expected(att[j])
        if got != want or max(range(len(att[j])), key=lambda i: att[j][i]) not in got:
            ok, bad = False, bad + [(j, sorted(got), sorted(want))]
    check(ok, "hovering each target token highlights its largest-weight source tokens", bad)
    ok, bad = True, []
    for i, th in enumerate(srcs):
        actions.move_to_element(th).perform()
        got, want = highlighted(panel, "tgt"), expected([row[i] for row in att])
        if got != want:
            ok, bad = False, bad + [(i, sorted(got), sorted(want))]
    check(ok, "hovering each source token highlights the target tokens attending to it", bad)
    actions.move_to_element(tgts[0]).perform()
    driver.save_screenshot(os.path.join(args.outdir, "serve-explorer.png"))

    # Keyboard: a focused target token highlights like a hovered one.
    actions.move_to_element(driver.find_element(By.TAG_NAME, "h1")).perform()
    driver.execute_script("arguments[0].focus()", tgts[-1])
    got = highlighted(panel, "src")
    check(got == expected(att[-1]), "a target token focused from the keyboard highlights",
          (sorted(got), sorted(expected(att[-1]))))


def check_hard_view(driver, actions, best):
    """The hard view: a target token highlights its aligned source token only."""
    driver.find_element(By.CSS_SELECTOR, 'input[name="view"][value="hard"]').click()
    panel = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, ".heatmap.hard"),
                       "the hard view").find_element(By.XPATH, "ancestor::div[@class='panel']")
    links = {j: i for i, j in best["alignment"]}
    ok, bad = True, []
    for j, th in enumerate(panel.find_elements(By.CSS_SELECTOR, "th.tgt")[:len(best["tokens"])]):
        actions.move_to_element(th).perform()
        got = highlighted(panel, "src")
        if got != {links[j]}:
            ok, bad = False, bad + [(j, sorted(got), links[j])]
    check(ok, "hard view: each target token highlights its aligned source token", bad)
    driver.find_element(By.CSS_SELECTOR, 'input[name="view"][value="soft"]').click()


def check_compare(driver, actions, model_names):
    """Two models side by side (where the server has two)."""
    if len(model_names) > 1:
        driver.find_element(By.ID, "compare").click()
        driver.find_element(By.ID, "go").click()
        panels = wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, ".panel")) == 2 and
                            driver.find_elements(By.CSS_SELECTOR, ".panel"), "two panels")
        names = [p.get_attribute("data-model") for p in panels]
        check(names == model_names[:2], "compare: one panel per model, side by side", names)
        boxes = [p.rect for p in panels]
        check(abs(boxes[0]["y"] - boxes[1]["y"]) < 1 and boxes[1]["x"] > boxes[0]["x"],
              "at 1280x800 the two panels are side by side", boxes)
        actions.move_to_element(panels[0].find_elements(By.CSS_SELECTOR, "th.tgt")[0]).perform()
        driver.save_screenshot(os.path.join(args.outdir, "serve-explorer-compare.png"))


def check_phone_and_errors(driver):
    """Phone width: one column, no horizontal scrolling; a server error shown, not thrown; a clean
    console."""
    # Phone width: one column, no horizontal scrolling of the page.
    # (Chromium's windows are at least ~500 px wide: the device metrics set the 390 px viewport.)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    time.sleep(0.3)
    inner = driver.execute_script("return window.innerWidth")
    check(inner == 390, "phone viewport of 390 px", inner)
    width = driver.execute_script("return [document.documentElement.scrollWidth, "
                                  "document.documentElement.clientWidth]")
    check(width[0] <= width[1], "no horizontal page overflow at phone width", width)
    driver.save_screenshot(os.path.join(args.outdir, "serve-explorer-phone.png"))

    # An error from the server is shown, not thrown.
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    set_viewport(driver, 1280, 800)
    beam_box = driver.find_element(By.ID, "beam")
    beam_box.clear()
    beam_box.send_keys("1")
    nb = driver.find_element(By.ID, "nbest")
    nb.clear()
    nb.send_keys("2")
    driver.find_element(By.ID, "go").click()
    err = wait_until(lambda: driver.find_element(By.ID, "error").text, "the error line")
    check(err == "n_best 2 exceeds beam 1", "the server's error message is shown", err)

    logs = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    # The deliberate 400 above is logged by Chromium as a failed resource load; nothing else may.
    logs = [e for e in logs if "/v1/translate" not in e["message"] or "400" not in e["message"]]
    check(not logs, "no errors in the browser console", logs)

def run_with_key(driver, margs, work):
    """A server with --api-key-file: the page asks for the key once and then works."""
    key_file = os.path.join(work, "keys")
    with open(key_file, "w") as f:
        f.write("page-key\n")
    server = serve_util.Server(os.path.abspath(args.nazar), margs + ["--api-key-file", key_file])
    try:
        driver.get("http://127.0.0.1:%d/" % server.port)
        alert = wait_until(lambda: _alert(driver), "the page to ask for the API key")
        alert.send_keys("page-key")
        alert.accept()
        wait_until(lambda: "loaded" in driver.find_element(By.ID, "status").text,
                   "the models to load with the key")
        check(True, "with --api-key-file the page asks for the key and loads the models")
    finally:
        server.terminate()
        server.kill()


def _alert(driver):
    try:
        return driver.switch_to.alert
    except Exception:  # noqa: BLE001 (NoAlertPresentException: not yet)
        return None


def main():
    work = tempfile.mkdtemp(prefix="nazar_serve_browser_")
    try:
        if args.model:
            margs, names = [], []
            for m in args.model:
                margs += ["--model", m]
                names.append(m.split("=", 1)[0])
        else:
            models = serve_util.make_models(args.nazar, work)
            margs = ["--model", "bahdanau=" + models["bahdanau"], "--model",
                     "luong=" + models["luong"]]
            names = ["bahdanau", "luong"]
        server = serve_util.Server(os.path.abspath(args.nazar), margs)
        opts = webdriver.ChromeOptions()
        opts.binary_location = chrome
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1280,800", "--user-data-dir=" + os.path.join(work, "profile")):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
        try:
            run(driver, server, names)
            if not args.model:
                run_with_key(driver, margs, work)
        finally:
            driver.quit()
            check(server.terminate() == 0, "the server exits 0 after SIGTERM")
            server.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d check(s) failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all checks passed; screenshots in " + args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
