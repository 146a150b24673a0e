//! SQL with simple syntax highlighting: the project's sqlparser tokenizer splits the model
//! file as written (comments and whitespace kept), each token a `<span class="…">` of its
//! kind. Text the tokenizer cannot read (a template, an unterminated string) is shown plain.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::html::escape;

/// `text` as escaped HTML with highlighting spans (the inside of a `<pre>`).
pub fn highlight(text: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, text).tokenize_with_location() else {
        return escape(text);
    };
    // Each token's text runs from its start to the next token's start: the tokens tile the
    // input, so the file is reproduced exactly whatever the spans' end convention.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |line: u64, column: u64| -> Option<usize> {
        let start = *line_starts.get(usize::try_from(line).ok()?.checked_sub(1)?)?;
        let col = usize::try_from(column).ok()?.checked_sub(1)?;
        text[start..]
            .char_indices()
            .nth(col)
            .map(|(i, _)| start + i)
            .or_else(|| (start + text[start..].len() == text.len()).then_some(text.len()))
    };
    let mut starts = Vec::with_capacity(tokens.len());
    for t in &tokens {
        match offset(t.span.start.line, t.span.start.column) {
            Some(o) => starts.push(o),
            None => return escape(text),
        }
    }
    if starts.first().is_some_and(|&s| s != 0) || starts.windows(2).any(|w| w[0] > w[1]) {
        return escape(text);
    }
    let mut out = String::with_capacity(text.len() * 2);
    for (k, t) in tokens.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        let piece = escape(&text[starts[k]..end]);
        match class(&t.token) {
            Some(class) => out.push_str(&format!("<span class=\"{class}\">{piece}</span>")),
            None => out.push_str(&piece),
        }
    }
    out
}

/// The CSS class of a token's kind; `None` for plain text (whitespace, identifiers).
fn class(token: &Token) -> Option<&'static str> {
    match token {
        Token::Word(w) if w.quote_style.is_some() => Some("id"),
        Token::Word(w) if w.keyword != Keyword::NoKeyword => Some("kw"),
        Token::Word(_) | Token::EOF => None,
        Token::Number(..) => Some("num"),
        Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::DollarQuotedString(_) => Some("str"),
        Token::Whitespace(Whitespace::SingleLineComment { .. })
        | Token::Whitespace(Whitespace::MultiLineComment(_)) => Some("com"),
        Token::Whitespace(_) => None,
        _ => Some("op"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_text_and_marks_its_tokens() {
        let sql = "-- Orders <b>\nselect id, 'a<b' as s\nfrom x where n > 1";
        let html = highlight(sql);
        assert!(
            html.contains("<span class=\"com\">-- Orders &lt;b&gt;\n</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"kw\">select</span>"), "{html}");
        assert!(
            html.contains("<span class=\"str\">&#39;a&lt;b&#39;</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"num\">1</span>"), "{html}");
        let plain = html
            .replace("</span>", "")
            .split("<span class=\"")
            .map(|p| p.split_once("\">").map_or(p, |(_, rest)| rest).to_string())
            .collect::<String>();
        assert_eq!(plain, escape(sql));
    }

    #[test]
    fn unreadable_text_is_plain() {
        assert_eq!(highlight("select 'open"), "select &#39;open");
    }
}
