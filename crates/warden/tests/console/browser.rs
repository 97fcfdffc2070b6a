//! The browser of the console's tests: headless Chromium under a chromedriver of its own,
//! driven over WebDriver.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::TestWarden;

/// A free port on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Headless Chromium under a chromedriver of its own, on a fresh profile.
pub(crate) struct Chrome {
    browser: Option<Browser>,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Chrome {
    /// Ends chromedriver and every browser process it started: they share its process group.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Chrome {
    pub(crate) async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// A browser started with `extra` switches too (`--force-dark-mode`).
    pub(crate) async fn start_with(extra: &[&str]) -> Self {
        let driver_bin =
            std::env::var("WARDEN_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let chromium =
            std::env::var("WARDEN_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        for (bin, what) in [(&driver_bin, "chromedriver"), (&chromium, "chromium")] {
            assert!(
                std::path::Path::new(bin).exists(),
                "the console's browser tests need {what} at {bin}: install Debian's packages \
                 with `apt-get install -y chromium chromium-driver`"
            );
        }
        let port = free_port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {driver_bin}: {e}"));
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-crash-reporter",
            "--disable-breakpad",
            "--window-size=1280,900",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .map(str::to_owned)
        .collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": args,
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let browser = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(b) => break b,
                Err(e) if Instant::now() > deadline => panic!("chromedriver on {url}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        Self {
            browser: Some(browser),
            driver,
            _profile: profile,
        }
    }

    pub(crate) fn b(&self) -> &Browser {
        self.browser.as_ref().unwrap()
    }

    pub(crate) async fn quit(mut self) {
        if let Some(b) = self.browser.take() {
            let _ = b.close().await;
        }
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.b().goto(url).await.unwrap();
    }

    pub(crate) async fn path(&self) -> String {
        let url = self.b().current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    pub(crate) async fn text(&self, css: &str) -> String {
        self.b()
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
            .text()
            .await
            .unwrap()
    }

    /// Waits for an element (the page may update by itself).
    pub(crate) async fn wait_for(
        &self,
        css: &str,
        within: Duration,
    ) -> fantoccini::elements::Element {
        match self
            .b()
            .wait()
            .at_most(within)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => e,
            Err(e) => {
                let at = self.path().await;
                let page = self.b().source().await.unwrap_or_default();
                panic!("`{css}` did not appear within {within:?} on {at}: {e}\n{page}")
            }
        }
    }

    pub(crate) async fn exists(&self, css: &str) -> bool {
        !self
            .b()
            .find_all(Locator::Css(css))
            .await
            .unwrap()
            .is_empty()
    }

    pub(crate) async fn click(&self, css: &str) {
        self.b()
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` to click: {e}"))
            .click()
            .await
            .unwrap();
    }

    pub(crate) async fn fill(&self, css: &str, value: &str) {
        let input = self.b().find(Locator::Css(css)).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys(value).await.unwrap();
    }

    pub(crate) async fn sign_in(&self, w: &TestWarden, token: &str) {
        self.goto(&format!("{}/sign-in", w.base)).await;
        self.fill("#token", token).await;
        self.b()
            .execute("window.wardenBefore = true;", vec![])
            .await
            .unwrap();
        self.click("form.signin button").await;
        // The answer (the overview, or the sign-in page saying why) before anything else.
        self.wait_for_new_page().await;
    }

    pub(crate) async fn sign_out(&self) {
        self.click("form.signout button").await;
        self.wait_for("form.signin", Duration::from_secs(10)).await;
    }

    /// Posts a form built in the page, with `fields` only, as a forger's page (or a page
    /// without the button) would, and waits for the answer to replace the page.
    pub(crate) async fn post(&self, action: &str, fields: &[(&str, &str)]) {
        let fields: Vec<Value> = fields.iter().map(|(k, v)| json!([k, v])).collect();
        self.b()
            .execute(
                "window.wardenBefore = true;
                 const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];
                 for (const [k, v] of arguments[1]) {
                   const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v;
                   f.appendChild(i);
                 }
                 document.body.appendChild(f); f.submit();",
                vec![json!(action), json!(fields)],
            )
            .await
            .unwrap();
        self.wait_for_new_page().await;
    }

    /// Waits until the page that was open has been replaced (it set `wardenBefore`).
    pub(crate) async fn wait_for_new_page(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let replaced = self
                .b()
                .execute(
                    "return document.readyState === 'complete' && window.wardenBefore === undefined",
                    vec![],
                )
                .await
                .ok()
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            if replaced {
                return;
            }
            assert!(Instant::now() < deadline, "the page was not replaced");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sets a marker on the page's `window`, which a reload or a navigation would clear.
    pub(crate) async fn mark(&self) {
        self.b()
            .execute("window.wardenKept = 'kept';", vec![])
            .await
            .unwrap();
    }

    /// Whether the marker of [`Chrome::mark`] is still there: the page was neither reloaded
    /// nor left since.
    pub(crate) async fn marked(&self) -> bool {
        self.b()
            .execute("return window.wardenKept === 'kept';", vec![])
            .await
            .unwrap()
            .as_bool()
            .unwrap_or(false)
    }

    /// Answers "OK" to the confirmation a form asks for (`data-confirm`).
    pub(crate) async fn confirm_everything(&self) {
        self.b()
            .execute("window.confirm = function () { return true; };", vec![])
            .await
            .unwrap();
    }

    /// Whether the browser holds a console session cookie.
    pub(crate) async fn has_session(&self) -> bool {
        self.b()
            .get_all_cookies()
            .await
            .unwrap()
            .iter()
            .any(|c| c.name() == "warden_session")
    }

    /// Clicks `css` and waits for the answer to replace the page.
    pub(crate) async fn submit(&self, css: &str) {
        self.b()
            .execute("window.wardenBefore = true", vec![])
            .await
            .unwrap();
        self.click(css).await;
        self.wait_for_new_page().await;
    }

    /// The session's anti-forgery token, as every form of the page carries it.
    pub(crate) async fn csrf(&self) -> String {
        self.b()
            .find(Locator::Css("input[name=_csrf]"))
            .await
            .unwrap()
            .attr("value")
            .await
            .unwrap()
            .unwrap()
    }

    /// The value of the session cookie (visible to WebDriver, not to the page's scripts).
    pub(crate) async fn session_cookie(&self) -> String {
        self.b()
            .get_all_cookies()
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.name() == "warden_session")
            .map(|c| c.value().to_owned())
            .expect("a session cookie")
    }

    /// A PNG of the whole page, as `docs/console/<name>.png`: the window is made as tall as the
    /// page first.
    pub(crate) async fn screenshot(&self, name: &str) {
        let sizes = self
            .b()
            .execute(
                "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]",
                vec![],
            )
            .await
            .unwrap();
        let height =
            sizes[0].as_u64().unwrap_or(900).clamp(300, 3000) + sizes[1].as_u64().unwrap_or(0);
        self.b()
            .set_window_size(1280, u32::try_from(height).unwrap())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let png = self.b().screenshot().await.unwrap();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/console");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
        self.b().set_window_size(1280, 900).await.unwrap();
    }

    /// Makes the page `width` CSS pixels wide (a phone's 420, a desktop's 1400).
    pub(crate) async fn set_width(&self, width: u32) {
        self.b().set_window_size(width, 900).await.unwrap();
        // The window's frame, if any, is not the page's: widen the window by it.
        let inner = self
            .b()
            .execute("return window.innerWidth", vec![])
            .await
            .unwrap()
            .as_u64()
            .unwrap_or(u64::from(width));
        let frame = u64::from(width).saturating_sub(inner);
        if frame > 0 {
            let outer = u32::try_from(u64::from(width) + frame).unwrap();
            self.b().set_window_size(outer, 900).await.unwrap();
        }
    }

    /// What sticks out of the page sideways: `None` when nothing makes it scroll
    /// horizontally; else the outermost elements that reach past its right edge.
    pub(crate) async fn overflow(&self) -> Option<String> {
        let found = self
            .b()
            .execute(
                r"
                const root = document.documentElement;
                const width = root.clientWidth;
                if (root.scrollWidth <= width) { return null; }
                const out = [];
                for (const el of document.body.querySelectorAll('*')) {
                    const r = el.getBoundingClientRect();
                    const wide = (e) => e.getBoundingClientRect().right > width + 1;
                    if (wide(el) && !Array.from(el.children).some(wide)) {
                        out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                            (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') +
                            ' right=' + Math.round(r.right) + ' ' + JSON.stringify((el.textContent || '').trim().slice(0, 40)));
                    }
                }
                return 'page ' + root.scrollWidth + ' px wide in ' + width + ': ' + out.slice(0, 8).join('; ');
                ",
                vec![],
            )
            .await
            .unwrap();
        found.as_str().map(str::to_owned)
    }

    /// Whether the whole of `css`'s first element is inside the viewport's width.
    pub(crate) async fn within_width(&self, css: &str) -> bool {
        self.b()
            .execute(
                "const r = document.querySelector(arguments[0]).getBoundingClientRect(); \
                 return r.left >= 0 && r.right <= document.documentElement.clientWidth;",
                vec![serde_json::Value::String(css.to_owned())],
            )
            .await
            .unwrap()
            .as_bool()
            .unwrap_or(false)
    }
}
