//! The one redaction of URLs and secrets. Every boundary where text leaves the process
//! (diagnostics, `--json`, artifacts, events, state records, OpenLineage) passes it through
//! [`scrub`]; code that shows a URL on purpose uses [`redact_url`].
//!
//! Two mechanisms, because neither alone is enough:
//! - **Known secrets.** Whoever reads a secret (a state URL's password, a catalog's bearer
//!   token from `token_env`, `OPENLINEAGE__API_KEY`, a URL's userinfo) calls [`register`];
//!   [`scrub`] replaces every occurrence of a registered value, however it got into the text
//!   (a server echoing it back, an error quoting it).
//! - **Credentials in URLs.** [`scrub`] also rewrites every `scheme://user:pass@host` and
//!   secret-named query parameter it finds, registered or not.

use std::sync::RwLock;

/// Shown in place of a secret.
pub const MASK: &str = "***";

/// Shorter values are not registered: replacing `a` everywhere would destroy the text and
/// protect nothing.
const MIN_SECRET_LEN: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Query parameters whose values are secrets (compared case-insensitively).
const SECRET_PARAMS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "sslpassword",
    "passfile",
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "client_secret",
    "signature",
    "sig",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
];

/// Remembers `value` as a secret for [`scrub`], along with its percent-decoded and
/// JSON-escaped forms (how it may appear in a URL or a JSON document).
pub fn register(value: &str) {
    let mut forms = vec![value.to_string()];
    if let Ok(decoded) = percent_decode(value) {
        forms.push(decoded);
    }
    let json = serde_json::to_string(value).unwrap_or_default();
    forms.push(json.trim_matches('"').to_string());
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    for form in forms {
        if form.len() >= MIN_SECRET_LEN && !secrets.contains(&form) {
            secrets.push(form);
        }
    }
    // Longest first, so that a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Registers the credentials of `url` (userinfo and secret query parameters) as secrets.
pub fn register_url(url: &str) {
    if let Ok(u) = url::Url::parse(url) {
        if !u.username().is_empty() && u.password().is_none() && !names_a_user(u.scheme()) {
            // `https://TOKEN@host`: the user name is the credential.
            register(u.username());
        }
        if let Some(p) = u.password() {
            register(p);
        }
        for (k, v) in u.query_pairs() {
            if is_secret_param(&k) {
                register(&v);
            }
        }
    } else if let Some((userinfo, _)) = userinfo_span(url).map(|r| (&url[r.clone()], r)) {
        if let Some((_, password)) = userinfo.split_once(':') {
            register(password);
        } else {
            register(userinfo);
        }
    }
}

fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// Schemes whose user name is an account, not a credential (kept when shown).
fn names_a_user(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "postgres" | "postgresql" | "mysql" | "trino" | "ssh"
    )
}

/// `url` safe to show: a password becomes `***` (`postgres://phlo:***@db/state`), and so does
/// a bare user name where it is the credential (`https://***@host`, not for database URLs);
/// secret query parameters become `***`. Text that is not a URL is scrubbed the same way.
pub fn redact_url(raw: &str) -> String {
    let Ok(mut u) = url::Url::parse(raw) else {
        return redact_urls_in(raw);
    };
    if u.password().is_some() {
        let _ = u.set_password(Some(MASK));
    } else if !u.username().is_empty() && !names_a_user(u.scheme()) {
        let _ = u.set_username(MASK);
    }
    if u.query().is_some() && u.query_pairs().any(|(k, _)| is_secret_param(&k)) {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let value = if is_secret_param(&k) {
                    MASK.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), value)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    // The URL encoder writes the mask as-is or percent-encoded depending on the position.
    u.to_string().replace("%2A%2A%2A", MASK)
}

/// `text` with every registered secret and every credential in a URL replaced by `***`.
pub fn scrub(text: &str) -> String {
    let mut out = redact_urls_in(text);
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MASK);
        }
    }
    out
}

/// The byte range of the userinfo of the URL starting at `url` (`scheme://USERINFO@host`).
fn userinfo_span(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let authority_end = url[start..]
        .find(|c: char| matches!(c, '/' | '?' | '#') || is_url_end(c))
        .map(|i| start + i)
        .unwrap_or(url.len());
    let at = url[start..authority_end].rfind('@')? + start;
    Some(start..at)
}

fn is_url_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')' | ']' | '}' | ',')
}

/// Rewrites the credentials of every URL-looking token in `text`, leaving the rest as it is.
fn redact_urls_in(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme: the letters, digits, `+`, `-`, `.` just before `://`.
        let scheme_start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map(|j| j + 1)
            .unwrap_or(0);
        let end = rest[i + 3..]
            .find(is_url_end)
            .map(|j| i + 3 + j)
            .unwrap_or(rest.len());
        out.push_str(&rest[..scheme_start]);
        let token = &rest[scheme_start..end];
        if scheme_start == i {
            // `://` without a scheme: not a URL.
            out.push_str(token);
        } else {
            out.push_str(&redact_token(token));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn redact_token(token: &str) -> String {
    let mut t = match userinfo_span(token) {
        Some(r) => {
            let userinfo = &token[r.clone()];
            let scheme = &token[..token.find("://").unwrap_or(0)];
            let shown = match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:{MASK}"),
                None if names_a_user(scheme) => userinfo.to_string(),
                None => MASK.to_string(),
            };
            format!("{}{shown}{}", &token[..r.start], &token[r.end..])
        }
        None => token.to_string(),
    };
    if let Some(q) = t.find('?') {
        let (base, query) = t.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_param(k) => format!("{k}={MASK}"),
                _ => pair.to_string(),
            })
            .collect();
        t = format!("{base}{}", query.join("&"));
    }
    t
}

fn percent_decode(s: &str) -> Result<String, ()> {
    if !s.contains('%') {
        return Err(());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            redact_url("postgres://phlo:s3cret@db.example:5432/state"),
            "postgres://phlo:***@db.example:5432/state"
        );
        assert_eq!(
            redact_url("postgresql://db/state?user=phlo&password=s3cret&sslmode=require"),
            "postgresql://db/state?user=phlo&password=***&sslmode=require"
        );
        assert_eq!(
            redact_url("https://T0KEN@cat:8181/api"),
            "https://***@cat:8181/api"
        );
        assert_eq!(
            redact_url("postgres://postgres@127.0.0.1/postgres"),
            "postgres://postgres@127.0.0.1/postgres"
        );
        assert_eq!(
            redact_url("http://marquez:5000/api"),
            "http://marquez:5000/api"
        );
        // Unparseable (a bad IPv6 host) still loses the userinfo.
        let shown = redact_url("postgres://u:p%40ss@[::1/x");
        assert!(!shown.contains("p%40ss"), "{shown}");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn scrub_finds_urls_and_registered_secrets_anywhere() {
        register("tok-9f8e7d");
        let text = "GET http://u:pw-1234@cat:8181/v1/config?token=abc&x=1 failed: bad tok-9f8e7d\n\
                    \"location\":\"https://x:y@h/p\"";
        let s = scrub(text);
        for leaked in ["pw-1234", "abc", "tok-9f8e7d", "x:y"] {
            assert!(!s.contains(leaked), "{leaked} in {s}");
        }
        assert!(
            s.contains("http://u:***@cat:8181/v1/config?token=***&x=1"),
            "{s}"
        );
        assert!(s.contains("\"location\":\"https://x:***@h/p\""), "{s}");
        assert_eq!(scrub("no secrets: a://b"), "no secrets: a://b");
    }

    #[test]
    fn registering_covers_encoded_forms_and_ignores_tiny_values() {
        register_url("postgres://user:p%40ssw0rd@db/x");
        assert_eq!(scrub("p@ssw0rd and p%40ssw0rd"), "*** and ***");
        register("ab");
        assert_eq!(scrub("ab"), "ab");
    }
}
