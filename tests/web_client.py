"""Drives the web pages of `trove serve` in a real browser: Debian's Chromium, headless, through
Selenium and chromedriver. Run by tests/web.rs against a server of the sample repository (plus a
file whose text holds a <script>); prints one line per check and exits 1 on the first failure.

    python3 tests/web_client.py BASE_URL [SCREENSHOT_DIR]
    python3 tests/web_client.py --login TOKEN BASE_URL     (a server started with --token TOKEN)
    python3 tests/web_client.py --banner BASE_URL          (prints READY, then waits for a new version)
    python3 tests/web_client.py --bundles BASE_URL         (a server of sample.bundle and langs.bundle)

With SCREENSHOT_DIR, the pages are saved there as PNG files (web-search.png, web-file.png,
web-map.png: the
pictures in docs/serve.md are taken so, with TROVE_WEB_SCREENSHOTS=docs/img on tests/web.rs).
"""
import os
import sys
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

LOGIN = sys.argv[2] if sys.argv[1] == "--login" else None
BANNER = sys.argv[1] == "--banner"
BUNDLES = sys.argv[1] == "--bundles"
ARGS = sys.argv[3:] if LOGIN else sys.argv[2:] if BANNER or BUNDLES else sys.argv[1:]
BASE = ARGS[0].rstrip("/")
SHOTS = ARGS[1] if len(ARGS) > 1 else None


def shot(d, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        check(f"screenshot {name}", d.save_screenshot(os.path.join(SHOTS, name)))


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"]:
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail and not ok else ""), flush=True)
    if not ok:
        sys.exit(1)


def hits(d):
    return d.find_elements(By.CSS_SELECTOR, "#results .hit")


def langs(d):
    """The language of each result shown, read at once (results are replaced as one types)."""
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#results .hit .lang')).map(e => e.textContent)")


def kinds(d):
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#results .hit .kind')).map(e => e.textContent)")


def main():
    d = browser()
    wait = WebDriverWait(d, 15)
    try:
        d.get(BASE + "/")
        box = wait.until(EC.presence_of_element_located((By.ID, "q")))
        check("the search page has a labelled search box",
              d.find_element(By.CSS_SELECTOR, "label[for=q]") is not None)
        check("the served bundle's provenance is on the page",
              "sample" in d.find_element(By.CSS_SELECTOR, ".provenance").text)

        # `/` focuses the box, from anywhere on the page.
        d.find_element(By.TAG_NAME, "body").click()
        d.switch_to.active_element.send_keys("/")
        check("/ focuses the search box", d.switch_to.active_element.get_attribute("id") == "q")

        # Results as you type, grouped by file, with numbered, marked snippets.
        d.switch_to.active_element.send_keys("invoice")
        wait.until(lambda d: len(hits(d)) > 0)
        groups = d.find_elements(By.CSS_SELECTOR, "#results .file-group")
        check("typing shows results grouped by file", len(groups) > 0 and len(hits(d)) >= len(groups))
        check("the count and timing are shown", "results in" in d.find_element(By.CSS_SELECTOR, ".count").text)
        check("snippets are numbered and the words marked",
              d.find_elements(By.CSS_SELECTOR, "#results td.ln")
              and d.find_elements(By.CSS_SELECTOR, "#results mark"))
        check("the address keeps the query", "q=invoice" in d.current_url)
        check("one bundle served: no bundle picker", not d.find_elements(By.ID, "bundle"))
        shot(d, "web-search.png")

        # Filter by language, written in the box.
        box = d.find_element(By.ID, "q")
        box.clear()
        box.send_keys("lang:markdown invoice")
        wait.until(lambda d: langs(d) and set(langs(d)) == {"markdown"})
        check("lang: in the box filters by language", True)
        # ... and with the language control.
        box.clear()
        box.send_keys("invoice")
        wait.until(lambda d: "python" in langs(d) and "markdown" in langs(d))
        d.find_element(By.CSS_SELECTOR, "#lang option[value=python]").click()
        wait.until(lambda d: langs(d) and set(langs(d)) == {"python"})
        check("the language control filters", True)
        d.find_element(By.CSS_SELECTOR, "#kind option[value=function]").click()
        wait.until(lambda d: kinds(d) and set(kinds(d)) == {"function"})
        check("the kind control filters", "kind=function" in d.current_url, d.current_url)
        d.find_element(By.CSS_SELECTOR, "#kind option[value='']").click()
        wait.until(lambda d: kinds(d) and set(kinds(d)) != {"function"})

        # The keyboard alone: ↓ to the first result, Enter opens it at its lines.
        box = d.find_element(By.ID, "q")
        box.click()
        first = d.execute_script("return document.querySelector('#results .hit a.open').href")
        box.send_keys(Keys.ARROW_DOWN)
        check("↓ moves to the first result", d.switch_to.active_element.get_attribute("href") == first)
        d.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        second = d.switch_to.active_element.get_attribute("href")
        d.switch_to.active_element.send_keys(Keys.ARROW_UP)
        check("↓ then ↑ moves on and back", second != first
              and d.switch_to.active_element.get_attribute("href") == first)
        d.switch_to.active_element.send_keys(Keys.ENTER)
        wait.until(lambda d: "/file/" in d.current_url)
        rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.source tr"))
        check("Enter opens the file, every line numbered", len(rows) > 3)
        frag = urllib.parse.urlparse(d.current_url).fragment
        check("the result opens at its lines", frag.startswith("L")
              and d.find_elements(By.CSS_SELECTOR, "tr.hl"), d.current_url)

        # A permalink to a range survives a reload and highlights exactly those lines.
        d.get(BASE + "/file/billing/billing.py#L3-L5")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hl"))
        lit = [r.get_attribute("id") for r in d.find_elements(By.CSS_SELECTOR, "tr.hl")]
        check("a permalink highlights its range", lit == ["L3", "L4", "L5"], lit)
        d.refresh()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hl"))
        lit = [r.get_attribute("id") for r in d.find_elements(By.CSS_SELECTOR, "tr.hl")]
        check("... after a reload too", lit == ["L3", "L4", "L5"], lit)
        kw = [e.text for e in d.find_elements(By.CSS_SELECTOR, "table.source .tok-keyword")]
        check("the file is highlighted by its grammar", "class" in kw and "def" in kw, kw[:10])
        check("... comments and strings too",
              d.find_elements(By.CSS_SELECTOR, "table.source .tok-string, table.source .tok-comment"))

        # Go to definition: a resolved call is a link to the line that defines it.
        d.get(BASE + "/file/tests/test_billing.py")
        link = wait.until(lambda d: next((a for a in d.find_elements(By.CSS_SELECTOR, "a.ref")
                                          if a.text == "Invoice"), None))
        link.click()
        wait.until(lambda d: "/file/billing/billing.py#L" in d.current_url)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hl"))
        lit = d.find_element(By.CSS_SELECTOR, "tr.hl").text
        check("a reference goes to its definition", "Invoice" in lit, lit)
        check("the file has an outline of its definitions",
              any(a.text.endswith("PaymentService") for a in d.find_elements(By.CSS_SELECTOR, "nav.outline a")))
        # Find references: a definition's name opens its references in the side panel.
        defn = d.find_element(By.XPATH, "//a[@class='def' and normalize-space()='Invoice']")
        defn.click()
        panel = wait.until(EC.visibility_of_element_located((By.ID, "panel")))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#panel table.refs"))
        rows = d.find_element(By.CSS_SELECTOR, "#panel table.refs").text
        check("a definition opens its references in the side panel",
              "tests/test_billing.py" in rows and "/file/billing/billing.py" in d.current_url, rows[:300])
        check("... focus moves to the panel",
              d.switch_to.active_element.tag_name == "h2" and "Invoice" in d.switch_to.active_element.text)
        shot(d, "web-file.png")
        d.find_element(By.XPATH, "//aside[@id='panel']//nav[@class='tabs']/a[text()='callers']").click()
        wait.until(lambda d: d.find_elements(
            By.XPATH, "//aside[@id='panel']//nav[@class='tabs']/a[text()='callers' and @aria-current='page']"))
        rows = d.find_element(By.CSS_SELECTOR, "#panel table.refs").text
        check("... its callers, in the panel", "tests/test_billing.py" in rows and "call" in rows, rows[:300])
        d.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not panel.is_displayed())
        check("Escape closes the panel and focus goes back to the name",
              d.switch_to.active_element.text == "Invoice")
        # Without the script the same link is a whole page (and the panel's tabs are its tabs).
        d.get(BASE + defn.get_attribute("href").replace(BASE, ""))
        rows = d.find_element(By.CSS_SELECTOR, "table.refs").text
        check("a definition's link is also a references page", "tests/test_billing.py" in rows, rows[:300])
        d.find_element(By.XPATH, "//nav[@class='tabs']/a[text()='callers']").click()
        wait.until(lambda d: "follow=callers" in d.current_url)
        d.find_element(By.CSS_SELECTOR, "table.refs a").click()
        wait.until(lambda d: "/file/tests/test_billing.py#L" in d.current_url)
        check("a reference opens at its line", d.find_elements(By.CSS_SELECTOR, "tr.hl"))

        # A file whose text holds a script shows it as text and never runs it.
        d.get(BASE + "/file/web/evil.html")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.source tr"))
        text = d.find_element(By.CSS_SELECTOR, "table.source").text
        check("a <script> in a file is shown as text", "<script>window.pwned = 1</script>" in text, text[:200])
        check("... and never runs", d.execute_script("return window.pwned === undefined"))
        # Nor does one in the query box.
        d.get(BASE + "/?q=" + urllib.parse.quote("<script>window.pwned=2</script> invoice"))
        wait.until(EC.presence_of_element_located((By.ID, "q")))
        check("a <script> in the query never runs", d.execute_script("return window.pwned === undefined"))

        # The map: a folding tree with counts; a file opens its page.
        d.get(BASE + "/tree")
        tree = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.tree")))
        check("the map shows the folders with counts", "billing/" in tree.text and "definitions" in tree.text,
              tree.text[:300])
        shot(d, "web-map.png")
        d.find_element(By.XPATH, "//ul[@class='tree']//a[text()='billing.py']").click()
        wait.until(lambda d: d.current_url.endswith("/file/billing/billing.py"))
        check("a file in the map opens its page", d.find_elements(By.CSS_SELECTOR, "table.source tr"))

        # A path that no bundle holds.
        d.get(BASE + "/file/no/such.py")
        check("a missing file says so", "No served bundle holds" in d.find_element(By.TAG_NAME, "main").text)

        # Focus order: the box, then the controls in the order they are read.
        d.get(BASE + "/")
        box = wait.until(EC.presence_of_element_located((By.ID, "q")))
        box.click()
        order = []
        for _ in range(5):
            d.switch_to.active_element.send_keys(Keys.TAB)
            order.append(d.switch_to.active_element.get_attribute("id") or d.switch_to.active_element.tag_name)
        check("Tab goes box → mode → language → kind → path → Search",
              order == ["mode", "lang", "kind", "path", "button"], order)
        unlabelled = d.execute_script(
            "return Array.from(document.querySelectorAll('input:not([type=hidden]), select'))"
            ".filter(e => !document.querySelector('label[for=\"' + e.id + '\"]')).map(e => e.outerHTML)")
        check("every control has a label", not unlabelled, unlabelled)

        # Usable at 375 px: nothing wider than the screen, on every page.
        d.set_window_size(375, 800)
        for url in ["/?q=invoice", "/file/billing/billing.py", "/tree", "/refs-of?name=Invoice"]:
            d.get(BASE + url)
            wait.until(EC.presence_of_element_located((By.TAG_NAME, "main")))
            inner = d.execute_script("return window.innerWidth")
            wide = d.execute_script("return document.documentElement.scrollWidth")
            check(f"no horizontal scrolling at 375 px: {url}", wide <= inner, (wide, inner))
    finally:
        d.quit()


def login(token):
    """With --token: pages send a browser to the login form; a wrong token is refused there; the
    right one opens every page through a cookie, and the token never shows in an address."""
    d = browser()
    wait = WebDriverWait(d, 15)
    seen = []
    try:
        d.get(BASE + "/?q=invoice")
        wait.until(EC.presence_of_element_located((By.ID, "token")))
        check("a page without the token goes to the login form", d.current_url == BASE + "/login",
              d.current_url)
        d.find_element(By.ID, "token").send_keys("not-it" + Keys.ENTER)
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".error")))
        seen.append(d.current_url)
        check("a wrong token is refused on the form", "not this server's token" in
              d.find_element(By.CSS_SELECTOR, ".error").text)
        d.find_element(By.ID, "token").send_keys(token + Keys.ENTER)
        wait.until(EC.presence_of_element_located((By.ID, "q")))
        seen.append(d.current_url)
        d.find_element(By.ID, "q").send_keys("invoice")
        wait.until(lambda d: len(hits(d)) > 0)
        seen.append(d.current_url)
        check("the right token opens the search, results as you type", True)
        d.get(BASE + "/file/billing/billing.py#L3")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.source tr"))
        seen.append(d.current_url)
        check("... and the file pages", True)
        cookies = d.get_cookies()
        check("the cookie is HttpOnly, SameSite=Strict, and not the token",
              len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0].get("sameSite") == "Strict"
              and token not in cookies[0]["value"], cookies)
        check("the token is in no address", all(token not in u for u in seen), seen)
    finally:
        d.quit()


def banner():
    """A page open while a newer version of the bundle is swapped in says so, and its Reload
    shows the new version."""
    d = browser()
    wait = WebDriverWait(d, 40)
    try:
        d.get(BASE + "/?q=invoice")
        wait.until(lambda d: len(hits(d)) > 0)
        before = d.find_element(By.CSS_SELECTOR, 'meta[name="trove-generation"]').get_attribute("content")
        check("no banner while the version shown is the one served",
              not d.find_element(By.ID, "reload-banner").is_displayed())
        print("READY", flush=True)
        wait.until(lambda d: d.find_element(By.ID, "reload-banner").is_displayed())
        check("a bundle swapped under the server shows the banner", True)
        d.find_element(By.CSS_SELECTOR, "#reload-banner a").click()
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'meta[name="trove-generation"]')
                   .get_attribute("content") != before)
        check("Reload shows the new version, without the banner",
              not d.find_element(By.ID, "reload-banner").is_displayed())
    finally:
        d.quit()


def bundles():
    """Two bundles served (sample and langs): the picker narrows the results to one, its results
    and file pages stay in it, and `bundle:` in the box does the same."""
    d = browser()
    wait = WebDriverWait(d, 15)

    def bundle_of_hits(d):
        return d.execute_script(
            "return Array.from(document.querySelectorAll('#results .hit a.open'))"
            ".map(a => new URL(a.href).searchParams.get('bundle'))")

    try:
        d.get(BASE + "/")
        opts = wait.until(lambda d: [o.get_attribute("value") for o in
                                     d.find_elements(By.CSS_SELECTOR, "#bundle option")])
        check("several bundles served: a labelled bundle picker", opts == ["", "sample.bundle", "langs.bundle"]
              and d.find_element(By.CSS_SELECTOR, "label[for=bundle]"), opts)
        d.find_element(By.ID, "q").send_keys("invoice")
        wait.until(lambda d: set(bundle_of_hits(d)) == {"sample.bundle", "langs.bundle"})
        check("results come from both bundles, each link naming its bundle", True)
        d.find_element(By.CSS_SELECTOR, "#bundle option[value='langs.bundle']").click()
        wait.until(lambda d: bundle_of_hits(d) and set(bundle_of_hits(d)) == {"langs.bundle"})
        check("the picker narrows the results to one bundle", "bundle=langs.bundle" in d.current_url, d.current_url)
        d.find_element(By.CSS_SELECTOR, "#results .hit a.open").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.source tr"))
        check("a result opens the file of its bundle",
              d.find_element(By.CSS_SELECTOR, ".crumbs .bundle").text == "langs.bundle", d.current_url)
        d.get(BASE + "/?q=" + urllib.parse.quote("bundle:sample.bundle invoice"))
        wait.until(lambda d: hits(d))
        check("bundle: in the box narrows too", set(bundle_of_hits(d)) == {"sample.bundle"}, bundle_of_hits(d))
        d.get(BASE + "/?q=" + urllib.parse.quote("bundle:nope invoice"))
        err = d.find_element(By.CSS_SELECTOR, "#results .error").text
        check("an unknown bundle is named in the error", "nope" in err and "sample.bundle" in err, err)
        d.get(BASE + "/file/billing/billing.py?bundle=nope")
        check("a file page of an unknown bundle says so",
              "No served bundle is named" in d.find_element(By.TAG_NAME, "main").text)
    finally:
        d.quit()


if __name__ == "__main__":
    if BUNDLES:
        bundles()
    elif BANNER:
        banner()
    elif LOGIN:
        login(LOGIN)
    else:
        main()
