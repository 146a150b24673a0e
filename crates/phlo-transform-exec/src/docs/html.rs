//! HTML text: escaping, the file name of a page, and the shell every page shares.

/// `text` safe inside an element or a double-quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// The file a model's or source's page is written to (inside `models/` or `sources/`): the
/// name itself where it is made of letters, digits, `.`, `_` and `-`, anything else as `~hex`,
/// so no name can leave the folder or collide with another.
pub fn file_name(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' => out.push(b as char),
            b'.' if !out.is_empty() => out.push('.'),
            _ => out.push_str(&format!("~{b:02x}")),
        }
    }
    out.push_str(".html");
    out
}

/// The relative link from the site's root to a model's page.
pub fn model_href(name: &str) -> String {
    format!("models/{}", file_name(name))
}

/// The relative link from the site's root to a source's page.
pub fn source_href(name: &str) -> String {
    format!("sources/{}", file_name(name))
}

/// A whole page: `root` is the way back to the site's root (`""` or `"../"`).
pub fn page(title: &str, root: &str, body: &str, scripts: &[&str]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{} · phlo-transform docs</title>\n<link rel=\"stylesheet\" href=\"{root}assets/style.css\">\n</head>\n<body>\n<nav><a href=\"{root}index.html\">Models and sources</a> <a href=\"{root}graph.html\">Graph</a></nav>\n<main>\n",
        escape(title)
    );
    out.push_str(body);
    out.push_str("</main>\n");
    for s in scripts {
        out.push_str(&format!("<script src=\"{root}{s}\"></script>\n"));
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn file_names_stay_in_their_folder() {
        assert_eq!(file_name("shop.daily"), "shop.daily.html");
        assert_eq!(file_name("../x"), "~2e.~2fx.html");
        assert_eq!(file_name("a/b"), "a~2fb.html");
    }
}
