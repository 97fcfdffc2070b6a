//! The console driven without a browser, as a script (or an attacker with an ordinary
//! account) would: the sign-in form's cookie and anti-forgery field, then forms posted with
//! the session's.

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::common::TestWarden;

/// The value of `name="_csrf"` in a page.
pub(crate) fn csrf_in(page: &str) -> String {
    let at = page
        .find("name=\"_csrf\" value=\"")
        .expect("a form with `_csrf`");
    let rest = &page[at + "name=\"_csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// `fields` as `application/x-www-form-urlencoded`.
pub(crate) fn encode(fields: &[(&str, &str)]) -> String {
    let escape = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The value a response sets for cookie `name`.
pub(crate) fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    response.headers().get_all(SET_COOKIE).iter().find_map(|v| {
        let v = v.to_str().ok()?;
        let (pair, _) = v.split_once(';').unwrap_or((v, ""));
        let (n, value) = pair.split_once('=')?;
        (n == name).then(|| value.to_owned())
    })
}

/// A signed-in console session over plain HTTP.
pub(crate) struct Plain {
    base: String,
    http: reqwest::Client,
    cookie: String,
    csrf: String,
}

/// A client that follows no redirects, and opens a connection for each request (so that a
/// round-robin balancer in front of replicas sends each to the next one).
pub(crate) fn http() -> reqwest::Client {
    warden_mcp::http_client::install_tls();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

impl Plain {
    /// Signs in with `token` through the form, as a browser does.
    pub(crate) async fn sign_in(w: &TestWarden, token: &str) -> Self {
        Self::sign_in_at(&w.base, token).await
    }

    /// Signs in with `token` through the form of the console at `base`.
    pub(crate) async fn sign_in_at(base: &str, token: &str) -> Self {
        let http = http();
        let form = http.get(format!("{base}/sign-in")).send().await.unwrap();
        let nonce = set_cookie(&form, "warden_sign_in").expect("the sign-in cookie");
        let field = csrf_in(&form.text().await.unwrap());
        let signed = http
            .post(format!("{base}/sign-in"))
            .header(COOKIE, format!("warden_sign_in={nonce}"))
            .header("origin", base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(encode(&[("_csrf", field.as_str()), ("token", token)]))
            .send()
            .await
            .unwrap();
        assert_eq!(signed.status(), 303, "signed in");
        let sid = set_cookie(&signed, "warden_session").expect("a session");
        let mut plain = Self {
            base: base.to_owned(),
            http,
            cookie: format!("warden_session={sid}"),
            csrf: String::new(),
        };
        // Every signed-in page has the session's token in its sign-out form.
        let (_, home) = plain.get("/").await;
        plain.csrf = csrf_in(&home);
        plain
    }

    /// The same session, its requests sent to `base` (the same server, restarted elsewhere).
    pub(crate) fn moved_to(mut self, base: &str) -> Self {
        base.clone_into(&mut self.base);
        self
    }

    /// `GET path`, its answer to read as it comes (an event stream).
    pub(crate) async fn open(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    /// `GET path`: the status and the page.
    pub(crate) async fn get(&self, path: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// `POST path` with `form` and the session's anti-forgery token: the status, and the
    /// page or (for a redirect) where it leads.
    pub(crate) async fn post(&self, path: &str, form: &[(&str, &str)]) -> (u16, String) {
        let mut fields = vec![("_csrf", self.csrf.as_str())];
        fields.extend_from_slice(form);
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(encode(&fields))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let location = r
            .headers()
            .get(LOCATION)
            .map(|l| l.to_str().unwrap().to_owned());
        let body = r.text().await.unwrap();
        (status, location.unwrap_or(body))
    }
}
