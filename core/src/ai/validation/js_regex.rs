//! JavaScript regular expressions on Rust's engines.
//!
//! A schema's `pattern` (and `patternProperties`) is compiled by TypeBox as `new RegExp(p, "u")`
//! and tested with `test` (an unanchored search). Rust's syntax differs in the places that
//! matter for tool schemas: JavaScript's `\d`, `\w`, `\s`, `\b` and `.` have fixed ASCII /
//! JavaScript-whitespace meanings where Rust's are Unicode-aware, `[` inside a class is a
//! literal, and named groups are spelled `(?<name>…)`. The pattern is translated token by token
//! into the equivalent `fancy_regex` syntax (which adds look-around and back-references to the
//! linear-time `regex` engine, and uses it alone when neither appears).

/// A compiled JavaScript regular expression.
#[derive(Debug)]
pub(crate) struct JsRegex {
    regex: fancy_regex::Regex,
}

/// Flags of the JavaScript regular expression being translated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flags {
    /// The `u` flag: `\p{…}`, `\u{…}`, strict escapes, Unicode case folding.
    pub(crate) unicode: bool,
    /// The `i` flag (ASCII-only case folding without `u`).
    pub(crate) ignore_case: bool,
}

impl Flags {
    /// `new RegExp(pattern, "u")`, as TypeBox compiles `pattern` keywords.
    pub(crate) const UNICODE: Self = Self {
        unicode: true,
        ignore_case: false,
    };
}

impl JsRegex {
    /// Compiles `pattern` with `flags`; the error says why JavaScript or this translation rejects
    /// it.
    pub(crate) fn new(pattern: &str, flags: Flags) -> Result<Self, String> {
        let translated = Translator::new(pattern, flags).run()?;
        let regex = fancy_regex::RegexBuilder::new(&translated)
            .build()
            .map_err(|error| format!("invalid regular expression /{pattern}/: {error}"))?;
        Ok(Self { regex })
    }

    /// `RegExp.prototype.test`: whether the pattern matches anywhere in `text`. A search that
    /// exceeds the backtracking limit counts as no match.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text).unwrap_or(false)
    }
}

const WORD: &str = "A-Za-z0-9_";
const SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
const WORD_BOUNDARY: &str =
    "(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))";
const NOT_WORD_BOUNDARY: &str =
    "(?:(?<=[A-Za-z0-9_])(?=[A-Za-z0-9_])|(?<![A-Za-z0-9_])(?![A-Za-z0-9_]))";

/// One member of a character class.
enum ClassItem {
    Char(char),
    /// Already in Rust class syntax (`0-9`, `\p{L}`, `[^0-9]`).
    Set(String),
}

struct Translator<'p> {
    pattern: &'p str,
    chars: Vec<char>,
    at: usize,
    flags: Flags,
    out: String,
}

impl<'p> Translator<'p> {
    fn new(pattern: &'p str, flags: Flags) -> Self {
        Self {
            pattern,
            chars: pattern.chars().collect(),
            at: 0,
            flags,
            out: String::with_capacity(pattern.len() * 2),
        }
    }

    fn error(&self, what: &str) -> String {
        format!("invalid regular expression /{}/: {what}", self.pattern)
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn run(mut self) -> Result<String, String> {
        if self.flags.unicode && self.flags.ignore_case {
            // With `u`, JavaScript folds case by Unicode simple case folding, as Rust does.
            self.out.push_str("(?i)");
        }
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                '\\' => self.escape()?,
                '[' => self.class()?,
                '.' => self.out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
                '(' => self.group()?,
                '{' => self.braces()?,
                '}' | ']' if self.flags.unicode => {
                    return Err(self.error("lone quantifier brackets"));
                }
                '}' | ']' => push_escaped(&mut self.out, c),
                '^' | '$' | '|' | ')' | '*' | '+' | '?' => self.out.push(c),
                c => self.literal(c),
            }
        }
        Ok(self.out)
    }

    /// A group opening (the `(` is consumed): capturing, `(?:`, look-around, or named. Anything
    /// else after `(?` (inline flags such as `(?i)`) is a syntax error in JavaScript.
    fn group(&mut self) -> Result<(), String> {
        if self.peek(0) != Some('?') {
            self.out.push('(');
            return Ok(());
        }
        match (self.peek(1), self.peek(2)) {
            (Some(':' | '=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                self.out.push_str("(?");
                self.at += 1;
            }
            (Some('<'), Some(c)) if c.is_alphabetic() || c == '_' || c == '$' => {
                self.at += 2;
                self.out.push_str("(?P<");
            }
            _ => return Err(self.error("invalid group")),
        }
        Ok(())
    }

    /// `{n}`, `{n,}` or `{n,m}` (the `{` is consumed); without the `u` flag anything else is a
    /// literal brace.
    fn braces(&mut self) -> Result<(), String> {
        let rest: String = self.chars[self.at..]
            .iter()
            .take_while(|&&c| c != '}')
            .collect();
        let closed = self.at + rest.chars().count() < self.chars.len();
        let bounds = rest
            .split_once(',')
            .map_or((rest.as_str(), None), |(a, b)| (a, Some(b)));
        let number = |text: &str| {
            (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<u64>().unwrap_or(u64::MAX))
        };
        let valid = closed
            && match bounds {
                (low, None) => number(low).is_some(),
                (low, Some("")) => number(low).is_some(),
                (low, Some(high)) => match (number(low), number(high)) {
                    (Some(low), Some(high)) => {
                        if low > high {
                            return Err(self.error("numbers out of order in {} quantifier"));
                        }
                        true
                    }
                    _ => false,
                },
            };
        if valid {
            self.out.push('{');
            self.out.push_str(&rest);
            self.out.push('}');
            self.at += rest.chars().count() + 1;
            Ok(())
        } else if self.flags.unicode {
            Err(self.error("incomplete quantifier"))
        } else {
            push_escaped(&mut self.out, '{');
            Ok(())
        }
    }

    /// A literal character outside a class.
    fn literal(&mut self, c: char) {
        if self.ascii_fold() && c.is_ascii_alphabetic() {
            self.out.push('[');
            self.out.push(c.to_ascii_lowercase());
            self.out.push(c.to_ascii_uppercase());
            self.out.push(']');
        } else {
            push_escaped(&mut self.out, c);
        }
    }

    fn ascii_fold(&self) -> bool {
        self.flags.ignore_case && !self.flags.unicode
    }

    /// An escape outside a class (the backslash is consumed).
    fn escape(&mut self) -> Result<(), String> {
        let c = self
            .peek(0)
            .ok_or_else(|| self.error("\\ at end of pattern"))?;
        self.at += 1;
        match c {
            'd' => self.out.push_str("[0-9]"),
            'D' => self.out.push_str("[^0-9]"),
            'w' => self.out.push_str("[A-Za-z0-9_]"),
            'W' => self.out.push_str("[^A-Za-z0-9_]"),
            's' => {
                self.out.push('[');
                self.out.push_str(SPACE);
                self.out.push(']');
            }
            'S' => {
                self.out.push_str("[^");
                self.out.push_str(SPACE);
                self.out.push(']');
            }
            'b' => self.out.push_str(WORD_BOUNDARY),
            'B' => self.out.push_str(NOT_WORD_BOUNDARY),
            '1'..='9' => {
                self.out.push('\\');
                self.out.push(c);
                while let Some(d @ '0'..='9') = self.peek(0) {
                    self.at += 1;
                    self.out.push(d);
                }
            }
            'k' if self.peek(0) == Some('<') => {
                let end = self.chars[self.at..]
                    .iter()
                    .position(|&c| c == '>')
                    .ok_or_else(|| self.error("unterminated group name"))?;
                let name: String = self.chars[self.at + 1..self.at + end].iter().collect();
                self.at += end + 1;
                self.out.push_str("\\k<");
                self.out.push_str(&name);
                self.out.push('>');
            }
            'p' | 'P' if self.flags.unicode => {
                let property = self.property(c)?;
                self.out.push_str(&property);
            }
            _ => {
                let literal = self.char_escape(c, false)?;
                self.literal(literal);
            }
        }
        Ok(())
    }

    /// `\p{…}` / `\P{…}` (the letter is consumed), passed through in Rust's spelling.
    fn property(&mut self, letter: char) -> Result<String, String> {
        if self.peek(0) != Some('{') {
            return Err(self.error("invalid property name"));
        }
        let end = self.chars[self.at..]
            .iter()
            .position(|&c| c == '}')
            .ok_or_else(|| self.error("invalid property name"))?;
        let body: String = self.chars[self.at + 1..self.at + end].iter().collect();
        self.at += end + 1;
        if body.is_empty()
            || !body
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '=')
        {
            return Err(self.error("invalid property name"));
        }
        Ok(format!("\\{letter}{{{body}}}"))
    }

    /// A character escape that stands for one character (the escaped letter is consumed).
    fn char_escape(&mut self, c: char, in_class: bool) -> Result<char, String> {
        Ok(match c {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'f' => '\u{0C}',
            'v' => '\u{0B}',
            'b' if in_class => '\u{08}',
            '0' if !matches!(self.peek(0), Some('0'..='9')) => '\0',
            'c' if self.peek(0).is_some_and(|l| l.is_ascii_alphabetic()) => {
                let letter = self.peek(0).unwrap_or('a');
                self.at += 1;
                char::from(letter as u8 % 32)
            }
            'x' => {
                let code = self
                    .hex_digits(2)
                    .ok_or_else(|| self.error("invalid escape"))?;
                char::from_u32(code).ok_or_else(|| self.error("invalid escape"))?
            }
            'u' => self.unicode_escape()?,
            '-' if in_class => '-',
            c if "^$\\.*+?()[]{}|/".contains(c) => c,
            c if !self.flags.unicode => c,
            _ => return Err(self.error("invalid escape")),
        })
    }

    fn hex_digits(&mut self, count: usize) -> Option<u32> {
        let digits: String = self.chars.get(self.at..self.at + count)?.iter().collect();
        let code = u32::from_str_radix(&digits, 16).ok()?;
        if digits.len() != count || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.at += count;
        Some(code)
    }

    /// `\uXXXX`, a surrogate pair `\uD83D\uDE00`, or `\u{…}` with the `u` flag.
    fn unicode_escape(&mut self) -> Result<char, String> {
        if self.flags.unicode && self.peek(0) == Some('{') {
            let end = self.chars[self.at..]
                .iter()
                .position(|&c| c == '}')
                .ok_or_else(|| self.error("invalid Unicode escape"))?;
            let digits: String = self.chars[self.at + 1..self.at + end].iter().collect();
            self.at += end + 1;
            return u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| self.error("invalid Unicode escape"));
        }
        let high = self
            .hex_digits(4)
            .ok_or_else(|| self.error("invalid Unicode escape"))?;
        if (0xD800..0xDC00).contains(&high)
            && self.peek(0) == Some('\\')
            && self.peek(1) == Some('u')
        {
            let save = self.at;
            self.at += 2;
            if let Some(low @ 0xDC00..=0xDFFF) = self.hex_digits(4) {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(code).ok_or_else(|| self.error("invalid Unicode escape"));
            }
            self.at = save;
        }
        // A lone surrogate can never match a Rust string.
        char::from_u32(high).ok_or_else(|| self.error("lone surrogate escapes are not supported"))
    }

    /// A character class (the `[` is consumed).
    fn class(&mut self) -> Result<(), String> {
        let negated = self.peek(0) == Some('^');
        if negated {
            self.at += 1;
        }
        let mut items: Vec<ClassItem> = Vec::new();
        let mut ranges: Vec<(char, char)> = Vec::new();
        loop {
            let c = self
                .peek(0)
                .ok_or_else(|| self.error("unterminated character class"))?;
            self.at += 1;
            if c == ']' {
                break;
            }
            let first = self.class_atom(c)?;
            let ClassItem::Char(low) = first else {
                if self.flags.unicode && self.peek(0) == Some('-') && self.peek(1) != Some(']') {
                    return Err(self.error("invalid character class"));
                }
                items.push(first);
                continue;
            };
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|n| n != ']') {
                self.at += 1;
                let next = self.peek(0).unwrap_or(']');
                self.at += 1;
                match self.class_atom(next)? {
                    ClassItem::Char(high) => {
                        if high < low {
                            return Err(self.error("range out of order in character class"));
                        }
                        ranges.push((low, high));
                    }
                    set => {
                        if self.flags.unicode {
                            return Err(self.error("invalid character class"));
                        }
                        items.push(ClassItem::Char(low));
                        items.push(ClassItem::Char('-'));
                        items.push(set);
                    }
                }
            } else {
                ranges.push((low, low));
            }
        }
        if items.is_empty() && ranges.is_empty() {
            // `[]` matches nothing and `[^]` matches anything.
            self.out.push_str(if negated {
                "[\\x{0}-\\x{10FFFF}]"
            } else {
                "[^\\x{0}-\\x{10FFFF}]"
            });
            return Ok(());
        }
        self.out.push('[');
        if negated {
            self.out.push('^');
        }
        for (low, high) in ranges {
            push_range(&mut self.out, low, high);
            if self.ascii_fold() {
                for (from, to) in [('a', 'z'), ('A', 'Z')] {
                    let (start, end) = (low.max(from), high.min(to));
                    if start <= end {
                        let swap = |c: char| {
                            if c.is_ascii_lowercase() {
                                c.to_ascii_uppercase()
                            } else {
                                c.to_ascii_lowercase()
                            }
                        };
                        push_range(&mut self.out, swap(start), swap(end));
                    }
                }
            }
        }
        for item in items {
            match item {
                ClassItem::Char(c) => push_class_char(&mut self.out, c),
                ClassItem::Set(set) => self.out.push_str(&set),
            }
        }
        self.out.push(']');
        Ok(())
    }

    /// One class member starting with `c` (already consumed).
    fn class_atom(&mut self, c: char) -> Result<ClassItem, String> {
        if c != '\\' {
            return Ok(ClassItem::Char(c));
        }
        let e = self
            .peek(0)
            .ok_or_else(|| self.error("\\ at end of pattern"))?;
        self.at += 1;
        Ok(match e {
            'd' => ClassItem::Set("0-9".to_owned()),
            'D' => ClassItem::Set("[^0-9]".to_owned()),
            'w' => ClassItem::Set(WORD.to_owned()),
            'W' => ClassItem::Set(format!("[^{WORD}]")),
            's' => ClassItem::Set(SPACE.to_owned()),
            'S' => ClassItem::Set(format!("[^{SPACE}]")),
            'p' | 'P' if self.flags.unicode => ClassItem::Set(self.property(e)?),
            _ => ClassItem::Char(self.char_escape(e, true)?),
        })
    }
}

/// A literal outside a class, escaped when Rust's syntax gives it a meaning.
fn push_escaped(out: &mut String, c: char) {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// A literal inside a class, escaped when Rust's class syntax gives it a meaning (nested
/// classes, ranges, set operations).
fn push_class_char(out: &mut String, c: char) {
    if "\\[]-^&~".contains(c) {
        out.push('\\');
        out.push(c);
    } else if c.is_whitespace() || c.is_control() {
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    } else {
        out.push(c);
    }
}

fn push_range(out: &mut String, low: char, high: char) {
    push_class_char(out, low);
    if high != low {
        out.push('-');
        push_class_char(out, high);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(pattern: &str, text: &str) -> bool {
        JsRegex::new(pattern, Flags::UNICODE)
            .unwrap_or_else(|e| panic!("{e}"))
            .is_match(text)
    }

    #[test]
    fn javascript_character_classes() {
        assert!(test(r"^\d+$", "123"));
        assert!(!test(r"^\d+$", "١٢٣"));
        assert!(!test(r"^\w+$", "é"));
        assert!(test(r"^\s$", "\u{a0}"));
        assert!(test(r"^\s$", "\u{feff}"));
        assert!(!test(r"^\s$", "\u{85}"));
        assert!(!test(r"^.$", "\n"));
        assert!(!test(r"^.$", "\u{2028}"));
        assert!(test(r"^.$", "😀"));
        assert!(test(r"\bx", "éx"));
        assert!(!test(r"\Bx", "éx"));
        assert!(test(r"^[\d-]+$", "1-2"));
        assert!(test(r"^[^\s]+$", "ab"));
        assert!(test(r"^[[]$", "["));
        assert!(test(r"^[a&&b]+$", "a&&b"));
        assert!(test(r"^[+--]$", ","));
        assert!(!test(r"^[]$", ""));
        assert!(test(r"^[^]$", "\n"));
    }

    #[test]
    fn javascript_syntax() {
        assert!(test(r"^a\/b$", "a/b"));
        assert!(test(r"^(?<year>\d{4})-\k<year>$", "2024-2024"));
        assert!(test(r"^(a+)-\1$", "aa-aa"));
        assert!(!test(r"^(?!admin).*$", "administrator"));
        assert!(test(r"(?<=\$)\d+", "$42"));
        assert!(test(r"^\u{1F600}\uD83D\uDE00\u00e9\x41$", "😀😀éA"));
        assert!(test(r"^\p{Lu}\P{Lu}$", "Ab"));
        assert!(test(r"^\p{Script=Greek}+$", "αβ"));
        assert!(test(r"^\cJ$", "\n"));
        assert!(test(r"^#&~-$", "#&~-"));
        assert!(JsRegex::new("(", Flags::UNICODE).is_err());
        assert!(JsRegex::new(r"\q", Flags::UNICODE).is_err());
        assert!(JsRegex::new("[z-a]", Flags::UNICODE).is_err());
    }

    #[test]
    fn ascii_case_folding_without_the_u_flag() {
        let flags = Flags {
            unicode: false,
            ignore_case: true,
        };
        let regex = JsRegex::new(r"^[a-f0-9]+x$", flags).unwrap();
        assert!(regex.is_match("aF09X"));
        assert!(!regex.is_match("g"));
        let letters = JsRegex::new(r"^[a-z]$", flags).unwrap();
        assert!(!letters.is_match("\u{17F}"));
        assert!(!letters.is_match("\u{212A}"));
        assert!(letters.is_match("Q"));
    }
}
