//! Positions in a file's text, and what stands at one: the words an editor asks about.

use phlo_transform_core::diagnostic::Span;

/// A 0-based line and character column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// A half-open range of a file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

impl Range {
    /// The range of a compiler span (1-based, end inclusive of its last character).
    pub fn of_span(span: &Span) -> Range {
        Range {
            start: Position {
                line: span.start.line.saturating_sub(1),
                column: span.start.column.saturating_sub(1),
            },
            end: Position {
                line: span.end.line.saturating_sub(1),
                column: span.end.column.saturating_sub(1),
            },
        }
    }

    pub fn contains(&self, p: Position) -> bool {
        self.start <= p && p <= self.end
    }

    /// The empty range at the start of a file.
    pub fn file_start() -> Range {
        let start = Position { line: 0, column: 0 };
        Range { start, end: start }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The dotted word (`raw.orders`, `o.amount`, `amount`) around `p` in `text`, with its range;
/// `None` when `p` is not on one. Quotes are not part of the word.
pub(crate) fn word_at(text: &str, p: Position) -> Option<(String, Range)> {
    let line: Vec<char> = text.lines().nth(p.line)?.chars().collect();
    let at = p.column.min(line.len());
    let word_or_dot = |c: char| is_word(c) || c == '.';
    let mut start = at;
    while start > 0 && word_or_dot(line[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < line.len() && word_or_dot(line[end]) {
        end += 1;
    }
    let word: String = line[start..end].iter().collect();
    let word = word.trim_matches('.');
    if word.is_empty() || !word.chars().any(is_word) {
        return None;
    }
    let lead = line[start..end].iter().take_while(|c| **c == '.').count();
    let start = start + lead;
    Some((
        word.to_lowercase(),
        Range {
            start: Position {
                line: p.line,
                column: start,
            },
            end: Position {
                line: p.line,
                column: start + word.chars().count(),
            },
        },
    ))
}

/// The part of the dotted `word` the cursor column `column` is on, given the word starts at
/// `start`: for `o.amount` with the cursor on `amount`, (`o`, `amount`).
pub(crate) fn split_at_cursor(word: &str, start: usize, column: usize) -> (Option<&str>, &str) {
    let offset = column.saturating_sub(start);
    let mut seen = 0;
    let parts: Vec<&str> = word.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        seen += part.chars().count() + 1;
        if offset < seen || i == parts.len() - 1 {
            let qualifier = (i > 0).then(|| parts[i - 1]);
            return (qualifier, part);
        }
    }
    (None, word)
}

/// Every whole-word occurrence of `word` (case-insensitive) in `text`, as ranges.
pub(crate) fn occurrences(text: &str, word: &str) -> Vec<Range> {
    let word: Vec<char> = word.to_lowercase().chars().collect();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.to_lowercase().chars().collect();
        if chars.len() < word.len() {
            continue;
        }
        for i in 0..=chars.len() - word.len() {
            let before = i == 0 || !is_word(chars[i - 1]);
            let after = i + word.len() == chars.len() || !is_word(chars[i + word.len()]);
            if before && after && chars[i..i + word.len()] == word[..] {
                out.push(Range {
                    start: Position { line: n, column: i },
                    end: Position {
                        line: n,
                        column: i + word.len(),
                    },
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_a_position_is_dotted_and_lower_case() {
        let text = "select o.Amount\nfrom raw.orders o";
        let (w, r) = word_at(text, Position { line: 1, column: 8 }).unwrap();
        assert_eq!(w, "raw.orders");
        assert_eq!((r.start.column, r.end.column), (5, 15));
        let (w, _) = word_at(
            text,
            Position {
                line: 0,
                column: 10,
            },
        )
        .unwrap();
        assert_eq!(w, "o.amount");
        assert_eq!(split_at_cursor("o.amount", 7, 10), (Some("o"), "amount"));
        assert_eq!(split_at_cursor("raw.orders", 5, 5), (None, "raw"));
        assert!(word_at(text, Position { line: 0, column: 6 }).is_some());
        assert!(word_at("a  b", Position { line: 0, column: 2 }).is_none());
    }

    #[test]
    fn occurrences_are_whole_words() {
        let r = occurrences("select amount, amount_x, t.amount from t", "amount");
        let cols: Vec<usize> = r.iter().map(|r| r.start.column).collect();
        assert_eq!(cols, vec![7, 27]);
    }
}
