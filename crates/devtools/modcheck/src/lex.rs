//! Rust source to tokens: identifiers, `::` and punctuation.
//!
//! Comments, string, character and number literals and lifetimes are dropped: the module check
//! only needs to see paths.

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword (`crate`, `use`, `foo`; `r#foo` is `foo`, `$crate` is `crate`).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

/// A token and the line it starts on (1-based).
#[derive(Clone, Debug)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its line.
    pub line: u32,
}

fn ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Tokenizes `src`.
pub fn lex(src: &str) -> Vec<Token> {
    let s: Vec<char> = src.chars().collect();
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    // Skips a quoted literal whose opening quote is at `i`; returns the index after it.
    let skip_quoted = |mut i: usize, line: &mut u32| -> usize {
        let q = s[i];
        i += 1;
        while i < s.len() && s[i] != q {
            if s[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    // Skips a raw string whose `r` is at `i`; returns the index after it.
    let skip_raw = |mut i: usize, line: &mut u32| -> usize {
        i += 1;
        let mut hashes = 0;
        while at(i) == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1; // the opening quote
        while i < s.len() {
            if s[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                return i + 1 + hashes;
            }
            if s[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i
    };
    let raw_string_at = |i: usize| {
        // r"…", r#"…"#, r##"…"##
        let mut j = i + 1;
        while at(j) == '#' {
            j += 1;
        }
        at(i) == 'r' && at(j) == '"'
    };
    while i < s.len() {
        let c = s[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < s.len() {
                    if s[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if s[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if s[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => i = skip_quoted(i, &mut line),
            '\'' => {
                if at(i + 1) == '\\' || (at(i + 2) == '\'' && at(i + 1) != '\'') {
                    i = skip_quoted(i, &mut line); // a character literal
                } else {
                    i += 1; // a lifetime or label: its name is not a path
                    while ident_char(at(i)) {
                        i += 1;
                    }
                }
            }
            'b' if at(i + 1) == '"' || at(i + 1) == '\'' => i = skip_quoted(i + 1, &mut line),
            'b' if raw_string_at(i + 1) => i = skip_raw(i + 1, &mut line),
            'c' if at(i + 1) == '"' => i = skip_quoted(i + 1, &mut line),
            'r' if raw_string_at(i) => i = skip_raw(i, &mut line),
            'r' if at(i + 1) == '#' && ident_start(at(i + 2)) => i += 2, // r#ident: the ident follows
            c if ident_start(c) => {
                let start = i;
                while ident_char(at(i)) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Ident(s[start..i].iter().collect()),
                    line,
                });
            }
            c if c.is_ascii_digit() => {
                while ident_char(at(i)) {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push(Token {
                    tok: Tok::PathSep,
                    line,
                });
                i += 2;
            }
            '$' if at(i + 1) == 'c' => i += 1, // `$crate` reads as `crate`
            c => {
                out.push(Token {
                    tok: Tok::Punct(c),
                    line,
                });
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<String> {
        lex(src)
            .into_iter()
            .filter_map(|t| match t.tok {
                Tok::Ident(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_chars_and_lifetimes_are_not_tokens() {
        let src = r###"
            // crate::gone_a
            /* crate::gone_b /* nested */ crate::gone_c */
            let x = "crate::gone_d \" crate::gone_e";
            let y = r#"crate::gone_f "quoted""#;
            let z = b"crate::gone_g"; let w = br"crate::gone_h"; let q = '"'; let p = '\'';
            fn f<'a>(v: &'a str) -> char { 'x' }
            $crate::kept
        "###;
        let ids = idents(src);
        assert!(!ids.iter().any(|i| i.starts_with("gone")), "{ids:?}");
        assert!(
            !ids.contains(&"a".to_string()),
            "a lifetime is no ident: {ids:?}"
        );
        assert!(
            ids.ends_with(&["crate".to_string(), "kept".to_string()]),
            "{ids:?}"
        );
    }

    #[test]
    fn lines_are_counted_through_comments_and_strings() {
        let t = lex("/* one\ntwo */ \"three\nfour\"\nfive");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].line, 4);
    }
}
