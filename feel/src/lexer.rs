//! Splits FEEL source text into tokens. Names are single words here; the parser joins
//! the words of multi-word built-in function names such as `date and time`.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Number(String),
    String(String),
    /// A word: a variable or function name, or a keyword (`and`, `if`, `true` …).
    Name(String),
    /// A name in backticks, never a keyword: `` `order id` ``.
    QuotedName(String),
    /// A temporal literal: the text of `@"2025-01-01"`, `@"P1D"`, `@"10:00:00"`.
    Temporal(String),
    Symbol(Symbol),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symbol {
    OpenParen,
    CloseParen,
    OpenBracket,
    CloseBracket,
    OpenBrace,
    CloseBrace,
    Comma,
    Dot,
    DotDot,
    Colon,
    Plus,
    Minus,
    Star,
    StarStar,
    Slash,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

impl Symbol {
    pub(crate) fn text(self) -> &'static str {
        match self {
            Symbol::OpenParen => "(",
            Symbol::CloseParen => ")",
            Symbol::OpenBracket => "[",
            Symbol::CloseBracket => "]",
            Symbol::OpenBrace => "{",
            Symbol::CloseBrace => "}",
            Symbol::Comma => ",",
            Symbol::Dot => ".",
            Symbol::DotDot => "..",
            Symbol::Colon => ":",
            Symbol::Plus => "+",
            Symbol::Minus => "-",
            Symbol::Star => "*",
            Symbol::StarStar => "**",
            Symbol::Slash => "/",
            Symbol::Equal => "=",
            Symbol::NotEqual => "!=",
            Symbol::Less => "<",
            Symbol::LessEqual => "<=",
            Symbol::Greater => ">",
            Symbol::GreaterEqual => ">=",
        }
    }
}

/// A token and the character offset where it starts (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned {
    pub(crate) token: Token,
    pub(crate) offset: usize,
}

fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '?'
}

fn is_name_part(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '?' || c == '\''
}

pub(crate) fn tokenize(source: &str) -> Result<Vec<Spanned>, String> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let start = index;
        if c.is_whitespace() {
            index += 1;
            continue;
        }
        // Comments: `// …` to the end of the line and `/* … */`.
        if c == '/' && chars.get(index + 1) == Some(&'/') {
            while index < chars.len() && chars[index] != '\n' {
                index += 1;
            }
            continue;
        }
        if c == '/' && chars.get(index + 1) == Some(&'*') {
            index += 2;
            loop {
                if index + 1 >= chars.len() {
                    return Err(format!("unclosed comment starting at position {start}"));
                }
                if chars[index] == '*' && chars[index + 1] == '/' {
                    index += 2;
                    break;
                }
                index += 1;
            }
            continue;
        }
        let token = if c.is_ascii_digit()
            || (c == '.' && chars.get(index + 1).is_some_and(char::is_ascii_digit))
        {
            let mut text = String::new();
            while index < chars.len() && chars[index].is_ascii_digit() {
                text.push(chars[index]);
                index += 1;
            }
            // A '.' followed by a digit is a decimal point; `1..5` is a range.
            if index < chars.len()
                && chars[index] == '.'
                && chars.get(index + 1).is_some_and(char::is_ascii_digit)
            {
                text.push('.');
                index += 1;
                while index < chars.len() && chars[index].is_ascii_digit() {
                    text.push(chars[index]);
                    index += 1;
                }
            }
            if index < chars.len() && (chars[index] == 'e' || chars[index] == 'E') {
                let mut lookahead = index + 1;
                if lookahead < chars.len() && (chars[lookahead] == '+' || chars[lookahead] == '-') {
                    lookahead += 1;
                }
                if lookahead < chars.len() && chars[lookahead].is_ascii_digit() {
                    text.extend(&chars[index..lookahead]);
                    index = lookahead;
                    while index < chars.len() && chars[index].is_ascii_digit() {
                        text.push(chars[index]);
                        index += 1;
                    }
                }
            }
            Token::Number(text)
        } else if c == '"' {
            index += 1;
            Token::String(lex_string(&chars, &mut index, start)?)
        } else if c == '@' && chars.get(index + 1) == Some(&'"') {
            // `@"…"`: FEEL-Scala's temporal literal, checked by the parser.
            index += 2;
            Token::Temporal(lex_string(&chars, &mut index, start)?)
        } else if c == '`' {
            index += 1;
            let mut text = String::new();
            loop {
                let Some(&next) = chars.get(index) else {
                    return Err(format!("unclosed '`' name starting at position {start}"));
                };
                index += 1;
                if next == '`' {
                    break;
                }
                text.push(next);
            }
            Token::QuotedName(text)
        } else if is_name_start(c) {
            let mut text = String::new();
            while index < chars.len() && is_name_part(chars[index]) {
                text.push(chars[index]);
                index += 1;
            }
            Token::Name(text)
        } else {
            let next = chars.get(index + 1).copied();
            let (symbol, width) = match (c, next) {
                ('.', Some('.')) => (Symbol::DotDot, 2),
                ('*', Some('*')) => (Symbol::StarStar, 2),
                ('!', Some('=')) => (Symbol::NotEqual, 2),
                ('<', Some('=')) => (Symbol::LessEqual, 2),
                ('>', Some('=')) => (Symbol::GreaterEqual, 2),
                ('(', _) => (Symbol::OpenParen, 1),
                (')', _) => (Symbol::CloseParen, 1),
                ('[', _) => (Symbol::OpenBracket, 1),
                (']', _) => (Symbol::CloseBracket, 1),
                ('{', _) => (Symbol::OpenBrace, 1),
                ('}', _) => (Symbol::CloseBrace, 1),
                (',', _) => (Symbol::Comma, 1),
                ('.', _) => (Symbol::Dot, 1),
                (':', _) => (Symbol::Colon, 1),
                ('+', _) => (Symbol::Plus, 1),
                ('-', _) => (Symbol::Minus, 1),
                ('*', _) => (Symbol::Star, 1),
                ('/', _) => (Symbol::Slash, 1),
                ('=', _) => (Symbol::Equal, 1),
                ('<', _) => (Symbol::Less, 1),
                ('>', _) => (Symbol::Greater, 1),
                _ => {
                    return Err(format!("unexpected character '{c}' at position {start}"));
                }
            };
            index += width;
            Token::Symbol(symbol)
        };
        tokens.push(Spanned {
            token,
            offset: start,
        });
    }
    Ok(tokens)
}

/// The rest of a string literal after its opening quote; `index` ends after the closing
/// quote. `start` is where the literal began, for messages.
///
/// Escapes as FEEL-Scala reads them: `\n`, `\r`, `\t`, `\b`, `\f`, `\'`, `\"` and
/// `\\` stand for their character, `\u` with four hex digits for that code point (the
/// DMN text's escape), and a backslash before anything else is kept with it: `"\d+"` is
/// the three characters of the regular expression, `"a\:b"` keeps its backslash.
fn lex_string(chars: &[char], index: &mut usize, start: usize) -> Result<String, String> {
    let mut text = String::new();
    loop {
        let Some(&next) = chars.get(*index) else {
            return Err(format!("unclosed string starting at position {start}"));
        };
        *index += 1;
        match next {
            '"' => break,
            '\\' => {
                let Some(&escaped) = chars.get(*index) else {
                    return Err(format!("unclosed string starting at position {start}"));
                };
                *index += 1;
                match escaped {
                    'n' => text.push('\n'),
                    'r' => text.push('\r'),
                    't' => text.push('\t'),
                    'b' => text.push('\u{8}'),
                    'f' => text.push('\u{c}'),
                    '"' => text.push('"'),
                    '\'' => text.push('\''),
                    '\\' => text.push('\\'),
                    'u' => match unicode_escape(chars, *index) {
                        Some(code) => {
                            text.push(code);
                            *index += 4;
                        }
                        None => text.push_str("\\u"),
                    },
                    other => {
                        text.push('\\');
                        text.push(other);
                    }
                }
            }
            other => text.push(other),
        }
    }
    Ok(text)
}

/// The character of the four hex digits at `index`, if they are four hex digits of a
/// valid code point.
fn unicode_escape(chars: &[char], index: usize) -> Option<char> {
    let hex: String = chars.iter().skip(index).take(4).collect();
    if hex.len() != 4 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<Token> {
        tokenize(source)
            .unwrap_or_else(|e| panic!("{source}: {e}"))
            .into_iter()
            .map(|t| t.token)
            .collect()
    }

    #[test]
    fn numbers_ranges_and_paths() {
        assert_eq!(
            kinds("1..5"),
            vec![
                Token::Number("1".into()),
                Token::Symbol(Symbol::DotDot),
                Token::Number("5".into())
            ]
        );
        assert_eq!(kinds("1.5e3"), vec![Token::Number("1.5e3".into())]);
        assert_eq!(
            kinds("order.total>=10"),
            vec![
                Token::Name("order".into()),
                Token::Symbol(Symbol::Dot),
                Token::Name("total".into()),
                Token::Symbol(Symbol::GreaterEqual),
                Token::Number("10".into())
            ]
        );
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            kinds(r#""a\"b\n\u00e9""#),
            vec![Token::String("a\"b\né".into())]
        );
        assert_eq!(
            kinds(r#""\b\f\'\\""#),
            vec![Token::String("\u{8}\u{c}'\\".into())]
        );
        // FEEL-Scala keeps a backslash it does not know as an escape.
        assert_eq!(
            kinds(r#""a\:b \d+ \v \u12 \\n""#),
            vec![Token::String(r"a\:b \d+ \v \u12 \n".into())]
        );
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("\"ends in a backslash\\").is_err());
        assert!(tokenize("1 # 2").is_err());
    }

    #[test]
    fn temporal_literals() {
        assert_eq!(
            kinds(r#"@"2025-01-01" + @"P1D""#),
            vec![
                Token::Temporal("2025-01-01".into()),
                Token::Symbol(Symbol::Plus),
                Token::Temporal("P1D".into())
            ]
        );
        // The zone in a date-time is part of the string, not another '@'.
        assert_eq!(
            kinds(r#"@"10:00@Europe/Berlin""#),
            vec![Token::Temporal("10:00@Europe/Berlin".into())]
        );
        assert!(tokenize("@").is_err());
        assert!(tokenize("@x").is_err());
        assert!(tokenize("@\"open").is_err());
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            kinds("1 /* one */ + // rest\n 2"),
            vec![
                Token::Number("1".into()),
                Token::Symbol(Symbol::Plus),
                Token::Number("2".into())
            ]
        );
        assert!(tokenize("1 /* open").is_err());
    }
}
